"""JSON text from untrusted sources (an agent's output, its answer, a schema file): how deep its
arrays and objects nest, measured in linear time before it is parsed, so that neither json nor
what walks the value afterwards (jsonschema, marshal, an MCP client) runs out of stack."""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any, Final

# How deep an answer's or a schema's arrays and objects may nest: far deeper than any real answer
# or schema, and shallow enough that json, jsonschema and what walks the value stay well within
# Python's stack wherever they run.
DEPTH_LIMIT: Final = 100

# A JSON string, as json reads it: possessive, so it never backtracks, and one left open runs to
# the end of the text. Every match starts at a quote outside a string, so the scan is linear.
_STRING: Final = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]++")
_STEP: Final = {"[": 1, "{": 1, "]": -1, "}": -1}


class TooDeepError(ValueError):
    """JSON text nested deeper than the limit: refused before it is parsed."""


def nesting(text: str) -> int:
    """How deep the arrays and objects of `text` nest, brackets inside strings left out.

    For JSON this is the depth of its value (0 for a scalar). For other text it is at least as
    deep as json gets before it finds the text is not JSON.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def loads(text: str, limit: int = DEPTH_LIMIT) -> Any:
    """`json.loads(text)`; TooDeepError (a ValueError) for text nested deeper than `limit`, before
    it is parsed."""
    # Fewer brackets than the limit cannot nest deeper: most text is measured by two counts.
    if text.count("[") + text.count("{") > limit and nesting(text) > limit:
        raise TooDeepError(
            f"nested deeper than {limit} levels of arrays and objects; start reads at most {limit}"
        )
    return json.loads(text)
