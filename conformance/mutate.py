"""Mutants of kgc's implementation (impl/), for measuring how much each detector catches.

A small AST mutator of our own rather than mutmut or cosmic-ray (neither is in the package
lists this project may install from, and both work by rewriting the source files in place and
driving a test runner of their own). Here a mutant is only (module, source text): the detectors
run it in a subprocess whose import hook (``mutant_bootstrap``) serves the mutated text for that
one module, so the repository is never edited and mutants can run side by side.

Operators are the classic semantic ones, chosen for coordinator code: comparison flips
(``<`` / ``<=``, ``==`` / ``!=``, ``in`` / ``not in``), boolean connective swap (``and`` / ``or``),
``not`` removal, arithmetic swaps (``+`` / ``-``), integer constants off by one, ``True`` /
``False`` swap, ``return X`` -> ``return None`` and a statement dropped (an expression
statement or assignment replaced by ``pass``) -- the last two model the forgotten callback and
the missed bookkeeping that the historical Kafka coordinator bugs were.

Docstrings, ``__all__``, logging calls and type annotations are not mutated: mutants there are
equivalent by construction.
"""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "IMPL_MODULES",
    "NATIVE_MODULES",
    "Mutant",
    "mutant_bootstrap",
    "mutants_of",
    "sample_mutants",
]

IMPL_DIR = Path(__file__).resolve().parent.parent / "impl"
# Module name -> file under impl/. The order is the order of `kgc mutate --modules` defaults.
IMPL_MODULES: dict[str, str] = {
    "coordinator": "coordinator.py",
    "delayed": "delayed.py",
    "group": "group.py",
    "timer": "timer.py",
    "purgatory": "purgatory.py",
}
# Compiled by mypyc into impl/_native and called natively by the other compiled modules (the
# purgatory calls the timer's compiled code, the delayed operations the group's, whatever the
# import hook serves): their mutants only run with KGC_PURE=1 (impl/native.py). delayed.py is
# compiled too but called only from Python (the coordinator), so the hook's mutant is the module
# every caller sees, compiled build or not (tests/conformance/test_mutate.py loads one).
NATIVE_MODULES = frozenset({"timer", "purgatory", "group"})

_CMP_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAP: dict[type[ast.operator], type[ast.operator]] = {ast.Add: ast.Sub, ast.Sub: ast.Add}
_QUIET_CALLS = frozenset({"debug", "info", "warning", "error", "exception", "log"})


@dataclass(frozen=True)
class Mutant:
    """One change to one module: `ident` names it for people (module:line:col:operator), `key`
    for the draw (no line number: the site's function, operator, text and ordinal there)."""

    module: str
    line: int
    col: int
    operator: str
    source: str
    original: str
    key: str = ""

    @property
    def ident(self) -> str:
        return f"{self.module}:{self.line}:{self.col}:{self.operator}"

    @property
    def qualified_module(self) -> str:
        return f"kgc.impl.{self.module}"

    def diff(self) -> str:
        """The unified diff of the mutant against the module's source (a few lines of context)."""
        path = f"impl/{IMPL_MODULES[self.module]}"
        lines = difflib.unified_diff(
            self.original.splitlines(keepends=True),
            self.source.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
            n=1,
        )
        return "".join(lines)


@dataclass(frozen=True)
class _Site:
    walk_index: int
    operator: str
    line: int
    col: int
    # What the site is, without where: the enclosing def/class path, the operator, the target
    # node's text and its ordinal among equal (scope, operator, text) -- the draw hashes this,
    # so an edit elsewhere in the module leaves the site's chance of being drawn alone.
    key: str = ""


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """Nodes whose mutants would be equivalent: docstrings, annotations, __all__, log calls."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                mark(body[0])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark(node.returns)
            for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                mark(a.annotation)
        if isinstance(node, ast.AnnAssign):
            mark(node.annotation)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            mark(node)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Attribute) and (f.attr in _QUIET_CALLS or f.attr.startswith(("_kafka_", "_log"))):
                mark(node)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mark(node)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            mark(node)
    return skip


def _scopes(tree: ast.Module) -> dict[int, str]:
    """Node id -> the qualified name of the def/class it is in (`<module>` at top level)."""
    out: dict[int, str] = {}

    def visit(node: ast.AST, scope: str) -> None:
        out[id(node)] = scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = node.name if scope == "<module>" else f"{scope}.{node.name}"
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, "<module>")
    return out


def _keyed(module: str, tree: ast.Module, sites: list[_Site]) -> list[_Site]:
    """`sites` (in source order) with their line-free content keys."""
    nodes = list(ast.walk(tree))
    scopes = _scopes(tree)
    seen: dict[tuple[str, str, str], int] = {}
    out: list[_Site] = []
    for site in sites:
        node = nodes[site.walk_index]
        base = (scopes[id(node)], site.operator, ast.unparse(node))
        ordinal = seen.get(base, 0)
        seen[base] = ordinal + 1
        key = "\0".join((module, *base, str(ordinal)))
        out.append(_Site(site.walk_index, site.operator, site.line, site.col, key))
    return out


def _sites(tree: ast.Module) -> list[_Site]:
    skip = _skipped_nodes(tree)
    out: list[_Site] = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        pos = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP_SWAP:
            out.append(_Site(index, f"cmp:{type(node.ops[0]).__name__}", *pos))
        elif isinstance(node, ast.BoolOp):
            out.append(_Site(index, f"bool:{type(node.op).__name__}", *pos))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append(_Site(index, "drop-not", *pos))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
            out.append(_Site(index, f"binop:{type(node.op).__name__}", *pos))
        elif isinstance(node, ast.AugAssign) and type(node.op) in _BINOP_SWAP:
            out.append(_Site(index, f"augop:{type(node.op).__name__}", *pos))
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            out.append(_Site(index, f"const:{node.value}", *pos))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            out.append(_Site(index, "const:int+1", *pos))
        elif isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                out.append(_Site(index, "return-none", *pos))
        elif isinstance(node, (ast.Expr, ast.Assign)):
            out.append(_Site(index, "drop-stmt", *pos))
    return out


class _Apply(ast.NodeTransformer):
    """Applies the one operator of `site` to the node it names; everything else stays."""

    def __init__(self, site: _Site, target: ast.AST) -> None:
        self.site = site
        self.target = target
        self.done = False

    def visit(self, node: ast.AST) -> ast.AST:  # type: ignore[override]
        if node is not self.target:
            return super().visit(node)  # type: ignore[no-any-return]
        self.done = True
        op = self.site.operator
        if isinstance(node, ast.Compare):
            node.ops = [_CMP_SWAP[type(node.ops[0])]()]
        elif isinstance(node, ast.BoolOp):
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        elif isinstance(node, ast.UnaryOp):
            return node.operand
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            node.op = _BINOP_SWAP[type(node.op)]()
        elif isinstance(node, ast.Constant) and op.startswith("const:") and type(node.value) is bool:
            node.value = not node.value
        elif isinstance(node, ast.Constant):
            node.value = node.value + 1
        elif isinstance(node, ast.Return):
            node.value = ast.Constant(value=None)
        elif isinstance(node, (ast.Expr, ast.Assign)):
            return ast.copy_location(ast.Pass(), node)
        return node


@functools.cache
def _unparsed(original: str) -> str:
    return ast.unparse(ast.parse(original))


def _sorted_sites(module: str, impl_dir: Path = IMPL_DIR) -> tuple[str, list[_Site]]:
    original = (impl_dir / IMPL_MODULES[module]).read_text()
    tree = ast.parse(original)
    sites = sorted(_sites(tree), key=lambda s: (s.line, s.col, s.operator))
    return original, _keyed(module, tree, sites)


def _materialise(module: str, original: str, site: _Site) -> Mutant | None:
    tree = ast.parse(original)
    target = next(n for i, n in enumerate(ast.walk(tree)) if i == site.walk_index)
    applier = _Apply(site, target)
    mutated = ast.fix_missing_locations(applier.visit(tree))
    base = _unparsed(original)
    text = ast.unparse(mutated)
    if not applier.done or text == base:
        return None
    return Mutant(module, site.line, site.col, site.operator, text, base, site.key)


def mutants_of(module: str, within: str | None = None) -> Iterator[Mutant]:
    """Every mutant of impl/<module>.py, in source order, or only those in the def `within`
    names (qualified, e.g. ``GroupCoordinator._commit_offsets``: building every mutant of the
    coordinator takes minutes). A change that unparses to the original text (a no-op) is skipped."""
    original, sites = _sorted_sites(module)
    for site in sites:
        if within is not None and site.key.split("\0")[1] != within:
            continue
        m = _materialise(module, original, site)
        if m is not None:
            yield m


def _rank(seed: int, key: str) -> bytes:
    """The site's place in the draw: a hash of the seed and the site's content key (hashlib,
    not hash(): the same in every interpreter, whatever PYTHONHASHSEED)."""
    return hashlib.sha256(f"{seed}\0{key}".encode()).digest()


def sample_mutants(modules: list[str], n: int | None, seed: int, impl_dir: Path = IMPL_DIR) -> list[Mutant]:
    """All mutants of `modules`, or the `n` whose content keys hash lowest with `seed` (bottom-k
    sampling). A shuffle of the list of all sites would redraw every sample on any edit that
    adds or moves a site; here an edit changes the sample only where it changes a drawn site's
    key (its function) or adds a site that hashes below the n-th. Only the drawn ones are built:
    a module has hundreds of sites."""
    sites = [(mod, original, site) for mod in modules for original, ss in [_sorted_sites(mod, impl_dir)] for site in ss]
    if n is not None and n < len(sites):
        sites.sort(key=lambda s: _rank(seed, s[2].key))
    out: list[Mutant] = []
    for mod, original, site in sites:
        m = _materialise(mod, original, site)
        if m is not None:
            out.append(m)
        if n is not None and len(out) >= n:
            break
    return sorted(out, key=lambda m: (list(IMPL_MODULES).index(m.module), m.line, m.col, m.operator))


def mutant_bootstrap(module: str, source_file: str) -> str:
    """Python code that, run first in a fresh interpreter, makes `import <module>` load the
    mutated text in `source_file` (a finder at the head of sys.meta_path): the one way the
    mutant reaches the detector, with no file of the repository touched."""
    return (
        "import sys, importlib.abc, importlib.util\n"
        f"_M, _F = {module!r}, {source_file!r}\n"
        "class _MutantLoader(importlib.abc.Loader):\n"
        "    def create_module(self, spec): return None\n"
        "    def exec_module(self, mod):\n"
        "        code = compile(open(_F).read(), _F, 'exec')\n"
        "        exec(code, mod.__dict__)\n"
        "class _MutantFinder(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name != _M: return None\n"
        "        return importlib.util.spec_from_loader(name, _MutantLoader(), origin=_F)\n"
        "sys.meta_path.insert(0, _MutantFinder())\n"
    )
