"""TLA+ values as TLC prints them, to Python values and back.

TLC prints every value of a counterexample as TLA+ text. The rest of kgc wants Python values
(to diff states, to hand traces to conformance as ITF, to compare with the implementation), so
this module parses that text. The mapping is chosen so that equal TLA+ values are equal Python
values and every value can go into a set (states hold sets of records of sequences):

    TLA+ (as TLC prints it)                 Python
    -3                                      int
    "join"                                  str
    TRUE / FALSE                            bool
    m1 (a model value)                      ModelValue("m1")   (never equal to the string "m1")
    {1, 2}                                  frozenset
    1..3                                    frozenset({1, 2, 3})
    <<1, 2>>, << >>                         tuple              (sequences and tuples alike)
    [generation |-> 1, state |-> "Empty"]   Record             (order of fields ignored)
    (m1 :> 0 @@ m2 :> 1)                    TlaFunction
    [m \\in {m1, m2} |-> {m}]               TlaFunction        (body may use only the bound name)

TLC 2.15 prints a function whose domain is 1..n as a sequence and one whose domain is a set of
strings as a record, so those are the Python forms they take here too. Lazy sets such as
[S -> T], SUBSET S and [a : S] are printed by TLC already enumerated (measured), so the parser
does not need their symbolic forms.

`format_value` writes the TLA+ text back in TLC's style (sets sorted, records in their field
order), so `parse_value(format_value(v)) == v` for every value this module produces.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, TypeAlias

__all__ = [
    "ModelValue",
    "Record",
    "TlaFunction",
    "TlaValue",
    "ValueParseError",
    "format_value",
    "parse_state",
    "parse_value",
    "sort_key",
]

TlaValue: TypeAlias = Any  # int | str | bool | ModelValue | frozenset | tuple | Record | TlaFunction


class ValueParseError(ValueError):
    """TLC printed something this parser does not understand; says where."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        snippet = text[max(0, pos - 20) : pos + 20].replace("\n", " ")
        super().__init__(f"{message} at offset {pos}: ...{snippet}...")
        self.text = text
        self.pos = pos


class ModelValue:
    """A TLC model value: equal only to itself, so it cannot be confused with a string.

    Interned: ModelValue(name) is one object per name, so equality and hashing are the
    object's own (identity, at C speed) and a model value equals another of the same name
    because it is that object. conform hashes and compares the clients' model values
    several times a step (every client variable is a function of them); as a frozen
    dataclass, each hash and each construction was a Python call. Immutable; a copy or an
    unpickled one (a Spark worker's) is the interned object again."""

    __slots__ = ("name",)
    name: str
    _interned: ClassVar[dict[str, ModelValue]] = {}

    def __new__(cls, name: str) -> ModelValue:
        got = ModelValue._interned.get(name)
        if got is None:
            got = object.__new__(cls)
            object.__setattr__(got, "name", name)
            got = ModelValue._interned.setdefault(name, got)
        return got

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"ModelValue is immutable: cannot set {key}")

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return ModelValue, (self.name,)

    def __lt__(self, other: object) -> bool:
        return self.name < other.name if isinstance(other, ModelValue) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.name <= other.name if isinstance(other, ModelValue) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.name > other.name if isinstance(other, ModelValue) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.name >= other.name if isinstance(other, ModelValue) else NotImplemented

    def __repr__(self) -> str:
        return f"ModelValue(name={self.name!r})"

    def __str__(self) -> str:
        return self.name


class TlaFunction(Mapping[Hashable, Any]):
    """An immutable, hashable TLA+ function; equality ignores the order of the pairs."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[Hashable, Any] | Iterable[tuple[Hashable, Any]] = ()) -> None:
        self._items: dict[Hashable, Any] = dict(items)
        self._hash: int | None = None

    def __getitem__(self, key: Hashable) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # The dict's own lookups: Mapping's generic ones go through __getitem__ and an exception
    # (conform asks `name in lastAction` and `.get` on every step)
    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self._items.get(key, default)

    def updated(self, changes: Mapping[Hashable, Any]) -> TlaFunction:
        """This function with the values of some arguments replaced (a TLA+ EXCEPT), without
        rebuilding the others: the incremental abstraction changes one client's entry a step."""
        out = object.__new__(type(self))
        out._items = {**self._items, **changes}
        out._hash = None
        return out

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        # the exact types first: isinstance of a Record against this Mapping subclass (an ABC)
        # is a Python-level ABCMeta.__instancecheck__ call, and conform compares records
        # (lastAction, timers) several times a step
        if type(other) in _FUNCTION_TYPES or isinstance(other, TlaFunction):
            return self._items == other._items  # type: ignore[attr-defined]
        return NotImplemented

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"


class Record(TlaFunction):
    """A TLA+ record: a function from field names to values.

    A separate type so callers can tell at a glance what TLC printed as `[a |-> 1]`; it equals
    the TlaFunction with the same pairs, as in TLA+.
    """

    __slots__ = ()

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        super().__init__(items)  # type: ignore[arg-type]  # str keys are Hashable keys
        for key in self._items:
            if not isinstance(key, str):
                raise TypeError(f"record field names are strings, got {key!r}")

    @classmethod
    def of_fields(cls, fields: dict[str, Any]) -> Record:
        """The record of a dict the caller just built with literal field names and hands
        over: neither copied nor checked. conform builds a lastAction record every step and
        a timer record for every new delayed operation; the copy and the per-field check
        were a fifth of making one."""
        out = object.__new__(cls)
        out._items = fields  # type: ignore[assignment]  # str keys are Hashable keys
        out._hash = None
        return out


_FUNCTION_TYPES = frozenset({TlaFunction, Record})


# --------------------------------------------------------------------------------------------
# Parsing

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<int>-?\d+)
  | (?P<punct>\|->|:>|@@|\.\.|->|<<|>>|\\in|[{}\[\](),:])
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", '"': '"', "\\": "\\"}
_UNESCAPES = {v: "\\" + k for k, v in _ESCAPES.items()}


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.DOTALL)


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ValueParseError("unexpected character", text, pos)
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append((kind, match.group(), pos))
        pos = match.end()
    tokens.append(("eof", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self, offset: int = 0) -> tuple[str, str, int]:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def expect(self, value: str) -> None:
        kind, got, pos = self.take()
        if got != value or kind == "string":
            raise ValueParseError(f"expected {value!r}, found {got or 'end of text'!r}", self.text, pos)

    def at(self, value: str) -> bool:
        kind, got, _ = self.peek()
        return got == value and kind != "string"

    def value(self) -> TlaValue:
        kind, text, pos = self.take()
        if kind == "int":
            number = int(text)
            if self.at(".."):
                self.take()
                kind2, end, pos2 = self.take()
                if kind2 != "int":
                    raise ValueParseError("expected an integer after '..'", self.text, pos2)
                return frozenset(range(number, int(end) + 1))
            return number
        if kind == "string":
            return _unescape(text[1:-1])
        if kind == "ident":
            if text == "TRUE":
                return True
            if text == "FALSE":
                return False
            return ModelValue(text)
        if text == "{":
            return frozenset(self.sequence_of("}"))
        if text == "<<":
            return tuple(self.sequence_of(">>"))
        if text == "(":
            return self.function_pairs()
        if text == "[":
            return self.bracket()
        raise ValueParseError(f"unexpected {text or 'end of text'!r}", self.text, pos)

    def sequence_of(self, closer: str) -> list[TlaValue]:
        items: list[TlaValue] = []
        if self.at(closer):
            self.take()
            return items
        while True:
            items.append(self.value())
            if self.at(","):
                self.take()
                continue
            self.expect(closer)
            return items

    def function_pairs(self) -> TlaFunction:
        pairs: dict[Hashable, Any] = {}
        while True:
            key = self.value()
            self.expect(":>")
            pairs[key] = self.value()
            if self.at("@@"):
                self.take()
                continue
            self.expect(")")
            return _make_function(pairs.items())

    def bracket(self) -> TlaValue:
        kind, first, pos = self.peek()
        following = self.peek(1)[1]
        if kind in ("ident", "string") and following == "|->":
            fields: dict[str, Any] = {}
            while True:
                kind, name, pos = self.take()
                if kind not in ("ident", "string"):
                    raise ValueParseError("expected a field name", self.text, pos)
                self.expect("|->")
                fields[_unescape(name[1:-1]) if kind == "string" else name] = self.value()
                if self.at(","):
                    self.take()
                    continue
                self.expect("]")
                return Record(fields)
        if kind == "ident" and following == "\\in":
            return self.function_constructor()
        raise ValueParseError("unsupported bracket form", self.text, pos)

    def function_constructor(self) -> TlaFunction:
        """[x \\in S |-> body] where body is a value that may mention only x itself."""
        _, bound, _ = self.take()
        self.expect("\\in")
        domain = self.value()
        self.expect("|->")
        body = self.value()
        self.expect("]")
        if not isinstance(domain, frozenset):
            raise ValueParseError("function domain is not a set", self.text, self.i)
        placeholder = ModelValue(bound)
        return _make_function((key, _substitute(body, placeholder, key)) for key in sorted(domain, key=sort_key))


#: A key TLC 2.15 prints as a record field: letters, digits and "_" with at least one letter
#: (measured: ("_" :> 0) and ("__" :> 0) stay functions, ("_a" :> 0) and ("a_" :> 0) print as
#: records). TLC also prints ("1a" :> 0) as [1a |-> 0], which the tokenizer here reads as a number
#: and a name: digit-first keys stay functions.
_IDENTIFIER = re.compile(r"_*[A-Za-z][A-Za-z0-9_]*\Z")


def _is_identifier(key: object) -> bool:
    return isinstance(key, str) and _IDENTIFIER.match(key) is not None


def _is_sequence_domain(keys: list[Hashable]) -> bool:
    if not all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
        return False
    return sorted(k for k in keys if isinstance(k, int)) == list(range(1, len(keys) + 1))


def _make_function(pairs: Iterable[tuple[Hashable, Any]]) -> TlaValue:
    """The Python form TLC's own printing would have chosen for this function.

    TLC prints a function on 1..n as a sequence and one whose domain is a set of identifier-like
    strings as a record (measured: ["a-b" :> 1] stays a function); normalising here keeps one
    Python value per TLA+ value.
    """
    items = dict(pairs)
    keys = list(items)
    if _is_sequence_domain(keys):
        return tuple(items[k] for k in range(1, len(keys) + 1))
    if keys and all(_is_identifier(k) for k in keys):
        return Record({str(k): v for k, v in items.items()})
    return TlaFunction(items)


def _substitute(value: TlaValue, placeholder: ModelValue, replacement: TlaValue) -> TlaValue:
    if value == placeholder and isinstance(value, ModelValue):
        return replacement
    if isinstance(value, frozenset):
        return frozenset(_substitute(v, placeholder, replacement) for v in value)
    if isinstance(value, tuple):
        return tuple(_substitute(v, placeholder, replacement) for v in value)
    if isinstance(value, TlaFunction):
        return _make_function(
            (_substitute(k, placeholder, replacement), _substitute(v, placeholder, replacement))
            for k, v in value.items()
        )
    return value


def parse_value(text: str) -> TlaValue:
    """Parse one TLA+ value printed by TLC (it may span several lines)."""
    parser = _Parser(text)
    value = parser.value()
    kind, rest, pos = parser.peek()
    if kind != "eof":
        raise ValueParseError(f"unexpected {rest!r} after the value", text, pos)
    return value


_ASSIGNMENT = re.compile(r"^(?:/\\ )?([A-Za-z_][A-Za-z0-9_]*) = ", re.MULTILINE)


def parse_state(text: str) -> dict[str, TlaValue]:
    """Parse the `/\\ var = value` lines of a state as TLC prints it.

    A state with a single variable is printed without the leading `/\\ `, and long values are
    broken over indented continuation lines; both occur in real output.
    """
    starts = [m for m in _ASSIGNMENT.finditer(text) if m.start() == 0 or text[m.start() - 1] == "\n"]
    # Continuation lines are indented, so an assignment must begin a line; a value that itself
    # contains "x = " on a new unindented line does not occur in TLC's printing.
    state: dict[str, TlaValue] = {}
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
        state[match.group(1)] = parse_value(text[match.end() : end].strip())
    if not state and text.strip():
        raise ValueParseError("no `var = value` assignments found", text, 0)
    return state


# --------------------------------------------------------------------------------------------
# Formatting


def sort_key(value: TlaValue) -> tuple[Any, ...]:
    """A total order over values of mixed kinds, so sets print (and compare) deterministically."""
    if isinstance(value, bool):
        return (0, value)
    if isinstance(value, int):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    if isinstance(value, ModelValue):
        return (3, value.name)
    if isinstance(value, tuple):
        return (4, len(value), tuple(sort_key(v) for v in value))
    if isinstance(value, frozenset):
        return (5, len(value), tuple(sorted(sort_key(v) for v in value)))
    if isinstance(value, TlaFunction):
        pairs = sorted((sort_key(k), sort_key(v)) for k, v in value.items())
        return (6, len(value), tuple(pairs))
    return (9, repr(value))


def _format_string(text: str) -> str:
    return '"' + "".join(_UNESCAPES.get(ch, ch) for ch in text) + '"'


def format_value(value: TlaValue) -> str:
    """TLA+ text for a value, in TLC's printing style (one line)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _format_string(value)
    if isinstance(value, ModelValue):
        return value.name
    if isinstance(value, frozenset):
        return "{" + ", ".join(format_value(v) for v in sorted(value, key=sort_key)) + "}"
    if isinstance(value, tuple):
        return "<<" + ", ".join(format_value(v) for v in value) + ">>"
    if isinstance(value, TlaFunction):
        keys = list(value)
        if _is_sequence_domain(keys):
            return "<<" + ", ".join(format_value(value[k]) for k in range(1, len(keys) + 1)) + ">>"
        if all(_is_identifier(k) for k in keys):
            return "[" + ", ".join(f"{k} |-> {format_value(v)}" for k, v in value.items()) + "]"
        return "(" + " @@ ".join(f"{format_value(k)} :> {format_value(v)}" for k, v in value.items()) + ")"
    raise TypeError(f"not a TLA+ value: {value!r}")
