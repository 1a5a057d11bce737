"""Native helpers (C sources compiled on first use)."""
