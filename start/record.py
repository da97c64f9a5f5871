"""Records: typed, immutable tuples with named fields, cheap to define.

A record is declared like a `typing.NamedTuple` and behaves like one: positional or keyword
construction with defaults, read-only fields, tuple equality, hashing, ordering and unpacking,
`_fields`, `_field_defaults` and `_replace`.

    class Origin(Record):
        layer: str
        path: str = ""

The difference is the price of the class statement, which every launch pays for every record
on its path. `typing.NamedTuple` compiles each field's annotation string (under
`from __future__ import annotations`) and compiles a `__new__` for each class: about 0.4 ms
per record, over 10 ms for a launch's thirty. A record class is built from its annotations'
names alone, and shares one `__new__`, in a few microseconds. `tests/test_record.py` holds
that difference, and type checkers see the fields through `dataclass_transform`.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, ClassVar, Self, dataclass_transform


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
                    raise TypeError(f"record {name}: field {field!r} needs a default, as before it")
                namespace[field] = property(itemgetter(index), doc=f"Field {index}: {field}.")
            namespace["_fields"] = namespace["__match_args__"] = fields
            namespace["_field_defaults"] = defaults
        namespace["__slots__"] = ()
        return super().__new__(mcls, name, bases, namespace)

    _fields: tuple[str, ...]


class Record(tuple[Any, ...], metaclass=_RecordType):
    """The base of every record. See the module's docstring."""

    _fields: ClassVar[tuple[str, ...]] = ()
    _field_defaults: ClassVar[dict[str, Any]] = {}

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        fields = cls._fields
        if len(args) == len(fields) and not kwargs:
            return tuple.__new__(cls, args)
        if len(args) > len(fields):
            raise TypeError(
                f"{cls.__name__}() takes {len(fields)} arguments but {len(args)} were given"
            )
        values = list(args)
        defaults = cls._field_defaults
        for field in fields[len(args) :]:
            if field in kwargs:
                values.append(kwargs.pop(field))
            elif field in defaults:
                values.append(defaults[field])
            else:
                raise TypeError(f"{cls.__name__}() missing argument {field!r}")
        if kwargs:
            name = next(iter(kwargs))
            problem = "multiple values for" if name in fields else "an unexpected keyword"
            raise TypeError(f"{cls.__name__}() got {problem} argument {name!r}")
        return tuple.__new__(cls, values)

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
