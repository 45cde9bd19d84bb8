"""Predator-prey on a grid (``env``) and its scripted chasers and fleers (``agents``)."""
