"""The suite's own multi-agent environments (PettingZoo AEC and Parallel APIs)."""
