"""One registry of seeded bugs, in one naming style, across the three places a bug can be seeded:
the spec (a model spec/models/bug_NAME.cfg sets the spec's Bug constant to "NAME"), the
implementation (a GroupCoordinator subclass in seeded_bugs.py) and the Z3 encoding
(proofs.transitions.BUGS). A name means one defect wherever it appears; `--bug NAME` takes
these names in every command, and `kgc bugs` lists them with the layers that have them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgc.conformance import seeded_bugs
from kgc.conformance.proofs import transitions
from kgc.spec.catalog import available_models

__all__ = ["Bug", "NAME_STYLE", "UnknownBug", "all_bugs", "bug", "require"]

NAME_STYLE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
SPEC_MODEL_PREFIX = "bug_"


class UnknownBug(LookupError):
    """A --bug name that no layer has, or that the asking command's layer lacks."""


@dataclass(frozen=True)
class Bug:
    name: str
    summary: str
    spec_model: str | None  # the TLC model that seeds it, e.g. "bug_two_leaders"
    implementation: bool  # kgc replay / conform / validate / fuzz --bug
    proof: bool  # kgc prove --bug

    @property
    def layers(self) -> list[str]:
        return [
            name
            for name, has in (("spec", self.spec_model), ("implementation", self.implementation), ("proof", self.proof))
            if has
        ]


def _summary_of(cls: type) -> str:
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.split())


def all_bugs() -> dict[str, Bug]:
    """Every seeded bug by name, from the three layers' own lists (nothing to keep in step)."""
    spec = {m[len(SPEC_MODEL_PREFIX) :]: m for m in available_models() if m.startswith(SPEC_MODEL_PREFIX)}
    impl = {
        name: cls
        for name, cls in {
            **seeded_bugs.BUGS,
            **seeded_bugs.SCENARIO_ONLY_BUGS,
            **seeded_bugs.INTERNAL_ERROR_BUGS,
            **seeded_bugs.LIVENESS_BUGS,
        }.items()
        if name != "none"
    }
    names = sorted(set(spec) | set(impl) | set(transitions.BUGS))
    return {
        name: Bug(
            name=name,
            summary=transitions.BUGS.get(name)
            or (_summary_of(impl[name]) if name in impl else f"spec model {spec[name]}"),
            spec_model=spec.get(name),
            implementation=name in impl,
            proof=name in transitions.BUGS,
        )
        for name in names
    }


def bug(name: str) -> Bug:
    found = all_bugs().get(name)
    if found is None:
        raise UnknownBug(f"no seeded bug {name!r} (`kgc bugs` lists them)")
    return found


def require(name: str, layer: str) -> Bug:
    """The bug `name`, which must exist in `layer` ("spec", "implementation", "proof")."""
    found = bug(name)
    if layer not in found.layers:
        raise UnknownBug(f"seeded bug {name!r} has no {layer} variant (it exists in: {', '.join(found.layers)})")
    return found
