"""docs/architecture.md's worked examples, run: each example file is written
into a temporary folder and each example run executed, with a registry of
its own so the examples' plug-ins do not leak into other tests."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kapla.scheduling import registry as registry_module

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
BLOCK = re.compile(r"<!-- (example-file: (?P<path>\S+)|example-run) -->\n```python\n(?P<code>.*?)```", re.S)


def _blocks():
    return [(m.group("path"), m.group("code")) for m in BLOCK.finditer(DOC.read_text())]


def test_the_page_has_the_three_worked_examples():
    files = [path for path, _ in _blocks() if path]
    runs = [code for path, code in _blocks() if not path]
    assert files == ["first_fit/__init__.py", "half_array/__init__.py", "batch_scaling/__init__.py"]
    assert len(runs) == 3


@pytest.fixture
def own_registry(monkeypatch):
    reg = registry_module.registry()
    mine = replace(reg, layer_solvers=dict(reg.layer_solvers), network_schedulers=dict(reg.network_schedulers),
                   solvers=dict(reg.solvers), studies=dict(reg.studies), plugins=list(reg.plugins))
    monkeypatch.setattr(registry_module, "_REGISTRY", mine)
    return mine


def test_the_worked_examples_run(tmp_path, monkeypatch, own_registry):
    monkeypatch.syspath_prepend(str(tmp_path))
    for path, code in _blocks():
        if path:
            target = tmp_path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(code)
    for path, code in _blocks():
        if not path:
            exec(compile(code, f"{DOC.name} example", "exec"), {})
    assert {"first_fit", "half_array"} <= set(own_registry.solvers) and "batch_scaling" in own_registry.studies
    for name in ("first_fit", "half_array", "batch_scaling"):
        sys.modules.pop(name, None)


def test_the_examples_leave_the_shared_registry_alone():
    assert "first_fit" not in registry_module.registry().solvers
