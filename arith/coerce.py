"""A config value from its text or JSON form into the type a config field's hint names: how --set values,
MLflow params and config files read back as the dataclasses' types."""

from __future__ import annotations

import json
import typing
from typing import Any

from arith.errors import ConfigError

_BOOLS = dict.fromkeys(("1", "true", "yes", "on"), True) | dict.fromkeys(("0", "false", "no", "off"), False)


def coerce(value: Any, hint: Any, key: str = "value") -> Any:
    """Parse `value` (often a --set string) into the type `hint` of a config field."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or (origin is not None and type(None) in args):  # X | None
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null", "")):
            return None
        inner = next(a for a in args if a is not type(None))
        return coerce(value, inner, key)
    try:
        if hint is bool:
            return _BOOLS[value.lower()] if isinstance(value, str) else bool(value)
        if hint is int:
            # a fraction is refused, not truncated ("2.5"); "1e3" and "3.0" are whole numbers
            whole = not isinstance(value, str) or value.strip().lstrip("+-").isdigit()
            number = value if whole else float(value)
            if isinstance(number, float) and not number.is_integer():
                raise ValueError(value)
            return int(number)
        if hint is float:
            return float(value)
        if hint is str:
            return str(value)
        if origin is list:
            (inner,) = args
            if isinstance(value, str):
                body = value.strip().removeprefix("[").removesuffix("]")
                value = [v.strip() for v in body.replace(";", ",").split(",") if v.strip()]
            return [coerce(v, inner, key) for v in value]
        if origin is dict:
            if isinstance(value, str):
                value = json.loads(value)
            return {str(k): str(v) for k, v in dict(value).items()}
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"{key}: cannot read {value!r} as {getattr(hint, '__name__', hint)}") from err
    return value
