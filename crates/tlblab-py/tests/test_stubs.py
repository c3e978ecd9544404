"""The type stubs and docstrings agree with the code: every public function's signature in
tlblab/__init__.pyi (names, kinds, defaults, annotations) is the code's, the native module's in
_tlblab.pyi too, and each docstring names each parameter."""

import ast
import inspect
import pathlib
import re

import pytest

import tlblab
from tlblab import _tlblab

PKG = pathlib.Path(tlblab.__file__).parent


def _stub(name):
    tree = ast.parse((PKG / name).read_text())
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    return funcs, classes


def _stub_params(fn):
    """(name, kind, default source or None, annotation source or None) per parameter."""
    a = fn.args
    out = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + a.defaults
    for p, d in zip(pos, defaults):
        out.append((p.arg, "POSITIONAL_OR_KEYWORD", d, p.annotation))
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL", None, a.vararg.annotation))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "KEYWORD_ONLY", d, p.annotation))
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD", None, a.kwarg.annotation))
    return out


def _check(fn, stub, annotations=True):
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    want = _stub_params(stub)
    assert [p.name for p in params] == [w[0] for w in want], fn.__name__
    for p, (name, kind, default, ann) in zip(params, want):
        assert p.kind.name == kind, (fn.__name__, name)
        if default is None:
            assert p.default is inspect.Parameter.empty, (fn.__name__, name, "has a default the stub lacks")
        else:
            assert p.default is not inspect.Parameter.empty, (fn.__name__, name, "has no default")
            stub_default = ast.literal_eval(default)
            # `...` in the stub: a default from tlblab._tlblab.DEFAULTS; `...` in a native
            # signature: a default pyo3 does not print (an empty list).
            if stub_default is not Ellipsis and p.default is not Ellipsis:
                assert p.default == stub_default, (fn.__name__, name, p.default)
        if annotations:
            assert (p.annotation if p.annotation is not inspect.Parameter.empty else None) == (
                ast.unparse(ann) if ann is not None else None
            ), (fn.__name__, name)
    if annotations:
        ret = sig.return_annotation
        assert (None if ret is inspect.Signature.empty else ret) == (
            ast.unparse(stub.returns) if stub.returns is not None else None
        ), (fn.__name__, "return")


def test_every_public_name_has_a_stub_and_back():
    funcs, classes = _stub("__init__.pyi")
    assert set(tlblab.__all__) == set(funcs) | set(classes)


@pytest.mark.parametrize("name", [n for n in tlblab.__all__ if inspect.isfunction(getattr(tlblab, n))])
def test_public_signatures_match_the_stub(name):
    funcs, _ = _stub("__init__.pyi")
    _check(getattr(tlblab, name), funcs[name])


def test_class_methods_match_the_stub():
    _, classes = _stub("__init__.pyi")
    for cname, node in classes.items():
        cls = getattr(tlblab, cname)
        methods = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
        public = {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}
        assert public == set(methods), cname
        for m, stub in methods.items():
            _check(getattr(cls, m), stub)


@pytest.mark.parametrize("name", ["run", "sweep", "load", "reproduce", "list"])
def test_native_signatures_match_their_stub(name):
    funcs, _ = _stub("_tlblab.pyi")
    _check(getattr(_tlblab, name), funcs[name], annotations=False)


@pytest.mark.parametrize("name", [n for n in tlblab.__all__ if inspect.isfunction(getattr(tlblab, n))])
def test_docstrings_name_every_parameter(name):
    fn = getattr(tlblab, name)
    doc = inspect.getdoc(fn) or ""
    assert doc, f"{name} has no docstring"
    for p in inspect.signature(fn).parameters:
        assert re.search(rf"\b{p}\b", doc), f"{name}'s docstring does not mention `{p}`"
