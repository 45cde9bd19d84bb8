"""Environment implementations of the suite, one subpackage per family (first-party envs arrive
with the robotics, multi-agent and text issues)."""
