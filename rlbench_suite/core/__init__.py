"""The suite's contracts, light: no simulator, torch or Ray (see docs/architecture.md)."""
