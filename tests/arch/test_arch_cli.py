"""``kapla arch``: listing, showing and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kapla.arch import load_arch, parse_arch
from kapla.cli.main import app

runner = CliRunner()


def test_list():
    result = runner.invoke(app, ["arch", "list"])
    assert result.exit_code == 0
    assert result.stdout.split() == ["atomic", "atomic_yx", "edge", "eyeriss", "interstellar", "multinode",
                                     "multinode_4x4", "multinode_nndataflow", "simba"]


def test_show_preset():
    result = runner.invoke(app, ["arch", "show", "multinode"])
    assert result.exit_code == 0
    assert "multinode: 256 nodes (16x16), 16384 PEs (8x8 per GBUF)" in result.stdout
    assert "GBUF" in result.stdout and "32 KiB" in result.stdout
    assert "counting" not in result.stdout  # kapla's own conventions go without saying


def test_show_names_conventions_that_are_not_kaplas():
    result = runner.invoke(app, ["arch", "show", "multinode_nndataflow"])
    assert result.exit_code == 0
    assert ("counting: dram_reads=per_node, partial_sums=through_dram, gbuf_side=pe_side, regf_holds=window"
            in result.stdout)


def test_show_json_loads_back():
    result = runner.invoke(app, ["arch", "show", "edge", "--json"])
    assert result.exit_code == 0
    assert parse_arch(json.loads(result.stdout)) == load_arch("edge")


def test_show_bad_file_exits_2(write_yaml, multinode_data):
    multinode_data["levels"][1]["capacity"] = -4
    path = write_yaml(multinode_data)
    result = runner.invoke(app, ["arch", "show", str(path)])
    assert result.exit_code == 2
    assert result.stderr == f"error: hardware file {path}: levels[1].capacity: must be positive (got -4)\n"
    assert "Traceback" not in result.output


def test_show_unknown_name_exits_2():
    result = runner.invoke(app, ["arch", "show", "tpu9000"])
    assert result.exit_code == 2 and result.stderr.startswith("error: unknown hardware 'tpu9000'")


def test_show_simba_lists_the_generic_hierarchy():
    result = runner.invoke(app, ["arch", "show", "simba"])
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("simba: 1 nodes (1x1), 1024 PEs (1x8 per VBUF), 8-bit words (ofm 24-bit)")
    for level in ("REGF", "VBUF", "PEBUF", "GBUF", "DRAM"):
        assert f"  {level} " in out
    assert "wgt 4 KiB + ofm 384 B" in out          # split capacity
    assert "ifm,ofm" in out and "holds" in out     # what each level keeps
    assert "partition" in out and "free" in out    # unrolls
    assert "(interstellar)" in out                 # energies from the table
    assert "tensor widths: ifm 8 bit, wgt 8 bit, ofm 24 bit" in out
    assert "array bus (ITCN, into REGF): 64 bit" in out


def test_show_interstellar_and_a_level_bus(tmp_path):
    result = runner.invoke(app, ["arch", "show", "interstellar"])
    assert result.exit_code == 0 and "PE mapping: C|K+repl" in result.stdout
    assert "13.5 pJ (interstellar)" in result.stdout and "0.96 pJ (interstellar)" in result.stdout
    example = Path(__file__).resolve().parents[2] / "examples" / "four_level.yaml"
    result = runner.invoke(app, ["arch", "show", str(example)])
    assert result.exit_code == 0 and "bus into LBUF: 256 bit = 16 words/cycle, 0.5 pJ/word" in result.stdout


def test_show_says_where_an_energy_is_interpolated_or_doubled():
    from kapla.arch.describe import describe_arch
    from kapla.explore.variants import vary

    text = describe_arch(vary(load_arch("interstellar"), {"GBUF.capacity": "96 KiB", "REGF.capacity": "64 B"}))
    assert "(interstellar; 96 KiB interpolated between 64 KiB and 128 KiB)" in text
    assert "0.12 pJ (interstellar)" in text  # 64 B is a table point: nothing to say
    text = describe_arch(vary(load_arch("interstellar"), {"GBUF.double_buffered": True}))
    assert "20.25 pJ (interstellar; priced at 2x: double-buffered)" in text


def test_show_simba_json_loads_back():
    result = runner.invoke(app, ["arch", "show", "simba", "--json"])
    assert result.exit_code == 0
    assert parse_arch(json.loads(result.stdout)) == load_arch("simba")
