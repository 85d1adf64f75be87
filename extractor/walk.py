"""`walk(visitor, node)`: libcst's `node.visit(visitor)` for a read-only visitor, without the
copy of the tree that libcst makes on the way.

`CSTNode.visit` rebuilds every node whose children it visits (`_visit_and_replace_children`
returns a new node: a dataclass constructed and validated again), and calls the visitor's
`on_visit_attribute` / `on_leave_attribute` around each of its attributes. For a visitor that
only reads, both are waste: they were 40% of the time of the extractor's libcst pass.

`walk` calls the same `on_visit` and `on_leave`, on the same nodes, in the same order:
- a node's child attributes are read in the order libcst visits them. That order is learnt
  from libcst itself, once per node type. `_visit_and_replace_children` is run with a
  visitor that records the attribute names and does not descend (libcst calls
  `on_visit_attribute` for every attribute, even an empty one);
- a node with a child in an attribute its type's recorded order lacks is handed to libcst's
  own `visit` whole, so a node type that visits its attributes conditionally stays exact.

Visitors whose `on_visit_attribute` hooks matter (`visit_Call_func`, ...) must keep using
`node.visit`; `walk` never calls them.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

_ORDER: dict[type, tuple[str, ...]] = {}  # node type -> its child attributes, in visit order
_OTHER: dict[type, tuple[str, ...]] = {}  # node type -> its other fields (a str, a bool, ...)
# a field value's type -> _NODE (a CSTNode), _MANY (a tuple or list of them) or 0, looked up
# by type: an ABC isinstance test of every field value costs as much as the copy walk avoids
_KIND: dict[type, int] = {}
_NODE, _MANY = 1, 2


def walk(visitor: cst.CSTVisitor, node: cst.CSTNode) -> None:
    """`node.visit(visitor)` for a visitor that never changes the tree (module doc)."""
    if visitor.on_visit(node):
        kind = node.__class__
        order = _ORDER.get(kind)
        if order is None:
            order = _learn(node)
        if _OTHER[kind] and _other_children(node, _OTHER[kind]):
            node._visit_and_replace_children(visitor)  # libcst's own, for this node's children
        else:
            for name in order:
                value = getattr(node, name)
                what = _KIND.get(value.__class__)  # (_kind, inlined: once per attribute)
                if what is None:
                    what = _kind(value)
                if what == _NODE:
                    walk(visitor, value)
                elif what == _MANY:
                    for item in value:
                        walk(visitor, item)
    visitor.on_leave(node)


def _kind(value: object) -> int:
    """_NODE, _MANY or 0 for a field's value, by its type (_KIND)."""
    t = value.__class__
    what = _KIND.get(t)
    if what is None:
        what = _KIND[t] = (
            _NODE if issubclass(t, cst.CSTNode) else _MANY if t in (tuple, list) else 0
        )
    return what


def _other_children(node: cst.CSTNode, other: tuple[str, ...]) -> bool:
    """Whether `node` has a child in a field its type's visit order lacks (then libcst visits
    it): a node type whose children differ from one node to the next."""
    for name in other:
        value = getattr(node, name, None)
        what = _kind(value)
        if what == _NODE or (what == _MANY and any(isinstance(v, cst.CSTNode) for v in value)):
            return True
    return False


def _learn(node: cst.CSTNode) -> tuple[str, ...]:
    recorder = _Recorder(node)
    node._visit_and_replace_children(recorder)
    kind = type(node)
    order = _ORDER[kind] = tuple(dict.fromkeys(recorder.attributes))
    # (a field declared `str` or `bool`, `Name.value` say, cannot hold a node: never looked at)
    _OTHER[kind] = tuple(
        f.name
        for f in dataclasses.fields(node)
        if f.name not in order and f.type not in (str, bool, "str", "bool")
    )
    return order


class _Recorder(cst.CSTVisitor):
    """The attribute names libcst visits on one node, in order; it never descends further."""

    def __init__(self, node: cst.CSTNode) -> None:
        super().__init__()
        self.node = node
        self.attributes: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        pass

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if node is self.node:
            self.attributes.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass
