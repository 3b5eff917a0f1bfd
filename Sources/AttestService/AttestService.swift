/// Placeholder until the AttestService issue lands.
