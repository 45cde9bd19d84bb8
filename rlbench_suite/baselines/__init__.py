"""Reference agents: scripted and heuristic controllers (``scripted``), later trained baselines."""
