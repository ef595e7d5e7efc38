"""The one error a setting that cannot be trained raises (re-exported by `arith.config`), apart so that
the modules `arith.config` imports can raise it."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration that cannot be trained. The message names the field and the valid choices."""
