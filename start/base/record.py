"""Records: typed, immutable tuples with named fields, cheap to define.

A record is declared like a `typing.NamedTuple` and behaves like one: positional or keyword
construction with defaults, read-only fields, tuple equality, hashing, ordering and unpacking,
`_fields`, `_field_defaults` and `_replace`.

    class Origin(Record):
        layer: str
        path: str = ""

The difference is the price of the class statement, which every launch pays for every record
on its path. `typing.NamedTuple` compiles each field's annotation string (under
`from __future__ import annotations`) and compiles a `__new__` for each class, for each of a
launch's thirty records. A record class is built from its annotations' names alone, and shares
one `__new__`, and the property of each field position, with every other record.
`tests/base/test_record.py` holds that difference (defining one compiles nothing),
and type checkers see the fields through `dataclass_transform`.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, ClassVar, Self, dataclass_transform

# An annotation, not a type of its own: free text that may hold a byte that was not UTF-8 (a
# surrogate escape: a path, a command line, a command's output), which start's stores keep as
# the bytes it stands for (start.base.sqlite.blob) in a BLOB column; a record's schema shows it
# as a string.
Text = str

# In `_defaults`, the place of a field that has none.
_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<no default>"})()


# The read-only property of each field position, shared by every record: field `i` of any record
# is item `i` of its tuple.
_FIELDS: list[property] = []


def _field(index: int) -> property:
    while len(_FIELDS) <= index:
        _FIELDS.append(property(itemgetter(len(_FIELDS))))
    return _FIELDS[index]


@dataclass_transform(frozen_default=True)
class _RecordType(type):
    """Turns the annotated names of a class body into a record's fields."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> _RecordType:
        if any(isinstance(base, _RecordType) and base._fields for base in bases):
            raise TypeError(f"record {name}: a record cannot extend another record")
        if any(isinstance(base, _RecordType) for base in bases):  # not Record itself
            fields = tuple(namespace.get("__annotations__", ()))
            defaults: dict[str, Any] = {}
            for index, field in enumerate(fields):
                if field.startswith("_"):
                    raise TypeError(f"record {name}: field {field!r} starts with an underscore")
                if field in namespace:
                    defaults[field] = namespace[field]
                elif defaults:
                    raise TypeError(
                        f"record {name}: field {field!r} has no default but follows one that has"
                    )
                namespace[field] = _field(index)
            namespace["_fields"] = namespace["__match_args__"] = fields
            namespace["_field_defaults"] = defaults
            namespace["_defaults"] = tuple(defaults.get(field, _MISSING) for field in fields)
            namespace["_names"] = frozenset(fields)
            namespace["_required"] = len(fields) - len(defaults)
        namespace["__slots__"] = ()
        return super().__new__(mcls, name, bases, namespace)

    _fields: tuple[str, ...]


class Record(tuple[Any, ...], metaclass=_RecordType):
    """The base of every record. See the module's docstring."""

    _fields: ClassVar[tuple[str, ...]] = ()
    _field_defaults: ClassVar[dict[str, Any]] = {}
    _defaults: ClassVar[tuple[Any, ...]] = ()  # aligned with _fields; _MISSING where none
    _names: ClassVar[frozenset[str]] = frozenset()
    _required: ClassVar[int] = 0  # the fields without a default: the first `_required`

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        if not kwargs and len(args) == len(cls._fields):
            return tuple.__new__(cls, args)
        return cls._from_fields(*args, fields=kwargs)

    @classmethod
    def _from_fields(cls, *first: Any, fields: dict[str, Any]) -> Self:
        """`cls(*first, **fields)`, without copying `fields` into keyword arguments."""
        # One pass of dict.get over the fields after the positional ones; the checks are on
        # sets and on the names without a default, which come first.
        names = cls._fields
        if not first:  # every field by name: how validation builds records
            if fields.keys() <= cls._names and all(
                map(fields.__contains__, names[: cls._required])
            ):
                return tuple.__new__(cls, list(map(fields.get, names, cls._defaults)))
            raise TypeError(cls._wrong_arguments(0, fields))
        given = len(first)
        if (
            given > len(names)
            or not fields.keys() <= cls._names
            or not fields.keys().isdisjoint(names[:given])
            or not all(map(fields.__contains__, names[given : cls._required]))
        ):
            raise TypeError(cls._wrong_arguments(given, fields))
        return tuple.__new__(cls, [*first, *map(fields.get, names[given:], cls._defaults[given:])])

    @classmethod
    def _wrong_arguments(cls, given: int, kwargs: dict[str, Any]) -> str:
        fields = cls._fields
        if given > len(fields):
            return f"{cls.__name__}() takes {len(fields)} arguments but {given} were given"
        for name in kwargs:
            if name in fields[:given]:
                return f"{cls.__name__}() got multiple values for argument {name!r}"
            if name not in fields:
                return f"{cls.__name__}() got an unexpected keyword argument {name!r}"
        missing = [f for f in fields[given:] if f not in kwargs and f not in cls._field_defaults]
        return f"{cls.__name__}() missing argument {missing[0]!r}"

    def __repr__(self) -> str:
        pairs = zip(self._fields, self, strict=True)
        shown = ", ".join(f"{field}={value!r}" for field, value in pairs)
        return f"{type(self).__name__}({shown})"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    def _replace(self, **changes: Any) -> Self:
        """A copy with the fields in `changes` replaced."""
        unknown = changes.keys() - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        pairs = zip(self._fields, self, strict=True)
        return tuple.__new__(type(self), [changes.get(field, value) for field, value in pairs])
