"""An expert for TextNav: TextAdventure's exploring expert, which reads only the observation
and the admissible commands (TextNav is a TextAdventure house without locks, whose quest is
one "Find the <object> and take it.")."""

from __future__ import annotations

from rlbench_suite.baselines.scripted.text_adventure import TextAdventureExpert


class TextNavExpert(TextAdventureExpert):
    """Explores the house breadth first, opening containers, until it can take the target."""
