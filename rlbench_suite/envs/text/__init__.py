"""The suite's text games: observations and actions are strings (Gymnasium ``Text`` spaces)."""
