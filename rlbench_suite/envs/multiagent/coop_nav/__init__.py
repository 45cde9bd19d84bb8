"""Cooperative navigation (MPE simple_spread): the batched NumPy ``core``, the PettingZoo
``env``, the batched ``vector`` env and the scripted team (``agents``)."""
