"""What a policy record may say of the wrappers a policy acts through: the suite's own, by
versioned name, with flat keyword arguments. One rule for a policy submission's metadata
(``artifacts.PolicyMetadata``), a self-reported Result's ``policy.wrappers`` (``store``) and
``rlbench submit``'s check before sending."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from rlbench_suite.core.result import validation_problems
from rlbench_suite.core.wrapper_names import STANDARD_WRAPPERS, policy_wrappers

MAX_WRAPPERS = 10

FLAT_KWARG = "a number, true/false, a string or null (a wrapper's kwargs are flat)"
"""What a submitted wrapper's keyword argument may be (the one rule: the server's model, and
``rlbench submit``'s check before sending, say it in these words)."""
JSON_KINDS = {dict: "an object", list: "a list"}


def _flat(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    kind = JSON_KINDS.get(type(value), type(value).__name__)
    raise PydanticCustomError("flat_kwarg", f"must be {FLAT_KWARG}, not {kind}")


FlatKwarg = Annotated[
    Any,
    AfterValidator(_flat),
    WithJsonSchema({"type": ["integer", "number", "boolean", "string", "null"]}),
]
"""A wrapper's keyword argument: one error saying what is accepted, where a union of the
scalar types made pydantic report each member's complaint."""


class SubmittedWrapper(BaseModel):
    """One of the suite's own wrappers a submitted policy acts through (by versioned name:
    the server runs the suite's code with these keyword arguments, never the submitter's)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=100)
    kwargs: dict[str, FlatKwarg] = Field(default_factory=dict, max_length=20)

    @field_validator("name")
    @classmethod
    def _standard(cls, name: str) -> str:
        if name not in STANDARD_WRAPPERS:
            raise ValueError(
                f"unknown wrapper {name!r}; accepted: {', '.join(sorted(STANDARD_WRAPPERS))}"
            )
        return name

    @model_validator(mode="after")
    def _not_the_score(self) -> SubmittedWrapper:
        policy_wrappers([{"name": self.name, "kwargs": self.kwargs}])  # the harness's rule
        return self



class _Wrappers(BaseModel):
    wrappers: list[SubmittedWrapper] = Field(max_length=MAX_WRAPPERS)


def wrapper_problems(wrappers: Any) -> str | None:
    """What is wrong with a policy record's ``wrappers`` (None: nothing), each problem at
    its place (``wrappers.0.kwargs.bonus: ...``)."""
    try:
        _Wrappers.model_validate({"wrappers": wrappers})
    except ValidationError as exc:
        return validation_problems(exc, whole="wrappers")
    return None
