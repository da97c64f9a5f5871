"""start.base.record: records behave like typing.NamedTuple, and defining one compiles nothing."""

from __future__ import annotations

import copy
import pickle
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from start.base.record import Record
from tests.conftest import REPO


class Point(Record):
    """A test record."""

    x: int
    y: int = 0
    label: str | None = None

    def moved(self) -> Point:
        return self._replace(x=self.x + 1)


def test_construction_positional_keyword_and_defaults() -> None:
    assert Point(1) == (1, 0, None)
    assert Point(1, 2, "a") == Point(x=1, y=2, label="a") == Point(1, label="a", y=2)
    assert Point(1).label is None
    assert (Point(1, 2).x, Point(1, 2).y) == (1, 2)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "Point() missing argument 'x'"),
        ((1, 2, "a", 4), {}, "Point() takes 3 arguments but 4 were given"),
        ((1,), {"x": 2}, "Point() got multiple values for argument 'x'"),
        ((1,), {"z": 2}, "Point() got an unexpected keyword argument 'z'"),
    ],
)
def test_wrong_arguments_are_type_errors(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        Point(*args, **kwargs)  # type: ignore[arg-type]


def test_fields_are_read_only_and_instances_have_no_dict() -> None:
    point = Point(1)
    with pytest.raises(AttributeError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        point.z = 2  # type: ignore[attr-defined]
    assert not hasattr(point, "__dict__")


def test_tuple_behaviour_like_a_namedtuple() -> None:
    point = Point(1, 2, "a")
    x, y, label = point
    assert (x, y, label) == (1, 2, "a")
    assert point[0] == 1
    assert len(point) == 3
    assert isinstance(point, tuple)
    assert sorted([Point(2), Point(1, 5), Point(1, 3)]) == [Point(1, 3), Point(1, 5), Point(2)]
    assert hash(Point(1, 2)) == hash((1, 2, None))
    assert {Point(1), Point(1)} == {Point(1)}


def test_class_attributes_and_repr() -> None:
    assert Point._fields == ("x", "y", "label")
    assert Point._field_defaults == {"y": 0, "label": None}
    assert Point.__match_args__ == ("x", "y", "label")
    assert Point.__doc__ == "A test record."
    assert repr(Point(1, label="a")) == "Point(x=1, y=0, label='a')"
    match Point(4, 5):
        case Point(x, y):
            assert (x, y) == (4, 5)


def test_replace_methods_copy_and_pickle() -> None:
    point = Point(1, 2)
    assert point._replace(label="b") == Point(1, 2, "b")
    assert type(point._replace(y=3)) is Point
    assert point.moved() == Point(2, 2)
    with pytest.raises(TypeError, match="Point has no field 'z'"):
        point._replace(z=1)
    assert copy.copy(point) == point
    assert copy.deepcopy(point) == point
    assert pickle.loads(pickle.dumps(point)) == point


def test_bad_definitions_are_refused() -> None:
    with pytest.raises(TypeError, match="field 'y' has no default but follows one that has"):

        class Gap(Record):
            x: int = 0
            y: int  # type: ignore[misc]  # the mistake under test; mypy sees it too

    with pytest.raises(TypeError, match="starts with an underscore"):

        class Hidden(Record):
            _x: int

    with pytest.raises(TypeError, match="cannot extend another record"):

        class More(Point):
            z: int  # type: ignore[misc]  # the mistake under test; mypy sees it too


@pytest.fixture
def compiles() -> Iterator[list[str]]:
    """Every `compile` (and so every `eval` or `exec` of a string) while the test runs."""
    seen: list[str] = []
    listening = [True]

    def hook(event: str, args: tuple[object, ...]) -> None:
        if listening[0] and event == "compile":
            seen.append(repr(args[1]))

    sys.addaudithook(hook)  # audit hooks cannot be removed: this one goes quiet after the test
    yield seen
    listening[0] = False


def test_defining_a_record_compiles_nothing(compiles: list[str]) -> None:
    """The reason records exist (see the module docstring): typing.NamedTuple compiles a string
    for every field's annotation and for each class's __new__, about 0.4 ms per class."""

    class Costly(Record):
        name: str
        path: Path | None = None
        items: tuple[str, ...] = ()

    assert Costly("a").items == ()
    assert compiles == []


def test_nothing_in_start_uses_typing_namedtuple() -> None:
    users = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "start").rglob("*.py"))
        if re.search(r"\bNamedTuple\b", path.read_text(encoding="utf-8"))
        and path.name != "record.py"
    ]
    assert users == [], "use start.base.record.Record: typing.NamedTuple costs every launch ~0.4 ms"


def test_fields_at_one_position_share_one_property() -> None:
    # Defining a record creates no descriptor: field i of every record reads item i.
    class One(Record):
        a: int
        b: str = "b"

    class Other(Record):
        x: str
        y: int = 0

    assert One.__dict__["b"] is Other.__dict__["y"]
    assert (One(1).a, One(1).b, Other("x", 2).y) == (1, "b", 2)
    with pytest.raises(AttributeError):
        One(1).a = 2  # type: ignore[misc]
