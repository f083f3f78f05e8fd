"""The one encoding of a registry entry (``researchcodebench.pset.PaperMeta``) as ``TaskVersion.meta``.

Every path that writes ``TaskVersion.meta`` goes through ``meta_to_json``; every reader through
``meta_from_json``.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from researchcodebench import pset as rcb_pset


def _json_safe(value: Any) -> Any:
    """Registry values as JSON: YAML dates in unknown keys become ISO text, tuples become lists."""
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def meta_to_json(meta: rcb_pset.PaperMeta) -> dict[str, Any]:
    """A registry entry as stored in ``TaskVersion.meta``.

    ``extra_order`` records the order of unknown keys, because PostgreSQL's jsonb does not keep key order
    and the exported ``papers.yaml`` should list them as the imported one did.
    """
    data = _json_safe(meta.to_dict())
    data["extra_order"] = [key for key, _ in meta.extra]
    return data


def meta_from_json(data: dict[str, Any]) -> rcb_pset.PaperMeta:
    """The inverse of ``meta_to_json``."""
    extra = data.get("extra") or {}
    order = [k for k in data.get("extra_order") or [] if k in extra]
    order += [k for k in extra if k not in order]
    return rcb_pset.PaperMeta.from_dict({**data, "extra": {k: extra[k] for k in order}})
