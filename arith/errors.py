"""The one error a setting that cannot be trained raises (re-exported by `arith.config`).

It lives apart so that the registries `arith.config` reads (position schemes, tasks) can raise it
without importing the config module they are read by."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration that cannot be trained. The message names the field and the valid choices."""
