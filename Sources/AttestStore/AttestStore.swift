/// Placeholder until the AttestStore issue lands.
