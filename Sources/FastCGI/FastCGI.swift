/// Placeholder until the FastCGI issue lands.
