"""A trace in the Azure LLM inference layout read into requests and per-slot rates: rows
worked out by hand (the header and timestamp form of AzurePublicDataset's
data/AzureLLMInferenceTrace_conv.csv), the bundled synthetic trace against the script
that wrote it, and every bad row or path named with its line, field and value."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.traffic.trace import parse_trace, read_trace, slot_counts

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "specs" / "synthetic-azure-layout-trace.csv"

# The first five rows of data/AzureLLMInferenceTrace_conv.csv (Azure/AzurePublicDataset).
AZURE_HEAD = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.2224670,879,55
2023-11-16 18:15:51.3910170,91,16
2023-11-16 18:15:52.5732450,91,16
"""


def test_the_azure_rows_by_hand():
    trace = parse_trace(AZURE_HEAD)
    # arrivals from the first: 50.9951690 − 46.6805900 = 4.3145790 s, and so on
    assert [r.arrival_s for r in trace.requests] == pytest.approx([0.0, 4.314579, 4.541877, 4.710427, 5.892655], abs=1e-6)
    assert [(r.prompt_tokens, r.output_tokens) for r in trace.requests] == [(374, 44), (396, 109), (879, 55), (91, 16), (91, 16)]
    # 2 s slots: [0, 2) holds one, [2, 4) none, [4, 6) four
    assert trace.counts(2.0) == [1, 0, 4]
    assert trace.rates_per_s(2.0) == [0.5, 0.0, 2.0]


def test_seconds_other_columns_and_row_order():
    text = "GeneratedTokens,Extra,TIMESTAMP,ContextTokens\n5,x,12.5,100\n7,y,10,200\n1,z,31,3\n"
    trace = parse_trace(text)
    assert [(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in trace.requests] == [(0.0, 200, 7), (2.5, 100, 5), (21.0, 3, 1)]
    assert slot_counts(trace.requests, 10) == [2, 0, 1]


def test_the_bundled_synthetic_trace_is_the_scripts_output():
    sys.path.insert(0, str(ROOT / "bench"))
    import make_synthetic_trace as gen

    assert BUNDLED.read_text() == gen.text()  # re-run the script if this fails
    trace = read_trace(BUNDLED)
    rows = gen.rows()
    assert len(trace.requests) == len(rows)
    assert BUNDLED.read_text().splitlines()[0] == "TIMESTAMP,ContextTokens,GeneratedTokens"
    # per 2-minute slot, the counts the script drew (arrivals relative to the first)
    first = rows[0][0]
    expected = [0] * len(gen.RATES_PER_S)
    for t, _, _ in rows:
        expected[int((t - first) // gen.SLOT_S)] += 1
    assert trace.counts(gen.SLOT_S)[: len(expected)] == expected[: len(trace.counts(gen.SLOT_S))]
    assert [(r.prompt_tokens, r.output_tokens) for r in trace.requests] == [(p, o) for _, p, o in rows]
    # the shape the script promises: a peak many times the quiet start
    counts = trace.counts(gen.SLOT_S)
    assert max(counts) >= 5 * counts[0]


@pytest.mark.parametrize(
    ("text", "field", "line", "says"),
    [
        ("", "trace", None, "empty"),
        ("time,prompt,output\n1,2,3\n", "header", 1, "missing TIMESTAMP, ContextTokens, GeneratedTokens"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n", "trace", None, "at least one request"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n1,2\n", "row", 2, "3 fields"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n1,0,3\n", "ContextTokens", 2, "at least 1"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n1,5,2.5\n", "GeneratedTokens", 2, "whole number"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n1,5,2\nsoon,5,2\n", "TIMESTAMP", 3, "YYYY-MM-DD"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,5,2\n2023-13-16 18:15:46.2,5,2\n", "TIMESTAMP", 3, "YYYY-MM-DD"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,5,2\n12.5,5,2\n", "TIMESTAMP", 3, "one form"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\ninf,5,2\n", "TIMESTAMP", 2, "seconds"),
    ],
)
def test_every_bad_row_is_named(text, field, line, says):
    with pytest.raises(InputError) as e:
        parse_trace(text, "t.csv")
    assert e.value.field == field and e.value.line == line and says in str(e.value), str(e.value)


def test_an_unreadable_path_is_named(tmp_path, monkeypatch):
    # a short relative path: the message shortens a long value (…), and a temporary folder's
    # path is longer under some runners (pytest-xdist's popen-gw0/) or a user's TMPDIR
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as e:
        read_trace(Path("absent.csv"))
    assert e.value.field == "trace" and "absent.csv" in str(e.value) and "no such file" in str(e.value)
    # a FIFO is refused before it is opened (a read would wait for a writer), a folder by name
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="pipe or a socket; give a CSV file with the columns TIMESTAMP"):
        read_trace(fifo)
    with pytest.raises(InputError, match="is a folder"):
        read_trace(tmp_path)
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"TIMESTAMP,ContextTokens,GeneratedTokens\n\xff\xfe,1,1\n")
    with pytest.raises(InputError, match="UTF-8"):
        read_trace(binary)
    with pytest.raises(InputError) as e:
        read_trace(tmp_path)  # a folder
    assert e.value.field == "trace"
