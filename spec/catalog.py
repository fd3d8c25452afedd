"""Find a model of the shipped spec: spec/models/NAME.cfg and the module it runs against.

Convention (keep spec/models/README.md, once written, in agreement): a model NAME is the
config spec/models/NAME.cfg; it runs with spec/models/MCNAME.tla when that file exists (an MC
module EXTENDS the spec and adds model-only definitions: constants, symmetry, views), else with
spec/MCGroupCoordinator.tla (the shared model plumbing: bounds, views, symmetry), and with
spec/GroupCoordinator.tla when neither exists (a spec folder without plumbing). Every .tla under spec/ is copied beside the root module,
since any of them may be EXTENDed.
"""

from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_MODULE", "Model", "ModelNotFoundError", "available_models", "resolve_model", "spec_root"]

SPEC_PACKAGE = "kgc.spec"
DEFAULT_MODULE = "GroupCoordinator"
# the model plumbing (bounds, views, symmetry) every shipped model runs against
MODEL_MODULE = "MCGroupCoordinator"


class ModelNotFoundError(LookupError):
    """The named model does not exist; the message lists the ones that do."""


@dataclass(frozen=True)
class Model:
    name: str
    config: Path
    module: Path
    modules: tuple[Path, ...]


def spec_root() -> Path:
    """The installed kgc.spec folder. Package data is read in place, so it must be a real
    folder (an editable install or an unpacked wheel), not a zip."""
    root = importlib.resources.files(SPEC_PACKAGE)
    if not isinstance(root, Path):
        raise ModelNotFoundError(
            f"{SPEC_PACKAGE} is not installed as a folder ({root}); kgc needs the .tla files on disk"
        )
    return root


def available_models(root: Path | None = None) -> list[str]:
    models = (root or spec_root()) / "models"
    return sorted(p.stem for p in models.glob("*.cfg")) if models.is_dir() else []


_MODEL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,99}")


def resolve_model(name: str, root: Path | None = None) -> Model:
    """A model by NAME (a name, never a path: `../../x` or `/etc/passwd` would run a model from
    outside the models folder and write its run folder there)."""
    if not _MODEL_NAME.fullmatch(name):
        raise ModelNotFoundError(
            f"model {name!r} is not a model name (letters, digits, _ and -; models: "
            f"{', '.join(available_models(root)) or 'none'})"
        )
    root = root or spec_root()
    models = root / "models"
    config = models / f"{name}.cfg"
    if not config.is_file():
        known = available_models(root)
        listing = ", ".join(known) if known else "none yet"
        raise ModelNotFoundError(f"no model {name!r}: {config} does not exist (models in {models}: {listing})")
    mc_module = models / f"MC{name}.tla"
    plumbing = root / f"{MODEL_MODULE}.tla"
    module = mc_module if mc_module.is_file() else plumbing if plumbing.is_file() else root / f"{DEFAULT_MODULE}.tla"
    if not module.is_file():
        raise ModelNotFoundError(f"model {name!r} needs {mc_module.name} in {models} or {module}, and neither exists")
    others = tuple(sorted(p for p in root.glob("*.tla") if p != module))
    return Model(name=name, config=config, module=module, modules=others)
