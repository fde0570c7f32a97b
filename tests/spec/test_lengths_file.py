"""A user's own request lengths, from a CSV or JSON Lines file: each request drawn whole
from the file, the means and the context taken from it, every bad value refused at its line."""

from __future__ import annotations

import random

import pytest

from solver.catalog import default_catalog
from solver.errors import InputError
from solver.optimise.shapes import build_problem
from solver.spec.lengths_file import read_lengths
from solver.spec.solve_spec import parse_spec
from solver.traffic.requests import draw_requests


def _spec(file: str, **workload) -> dict:
    return {
        "model": "llama-3.1-8b",
        "workload": {"requests_per_s": 5, "lengths_file": file, **workload},
        "sla": {"ttft": {"p99": "2s"}, "tpot": {"p90": "50ms"}},
        "search": {"gpus": ["h100-sxm"], "tp": [1], "weights": ["bf16"], "kv_cache": ["bf16"]},
    }


def test_a_csv_gives_the_means_the_context_and_whole_requests(tmp_path):
    rows = [(100, 10), (300, 30), (2000, 500)]
    (tmp_path / "log.csv").write_text("prompt_tokens,output_tokens\n" + "".join(f"{p},{o}\n" for p, o in rows))
    problem = build_problem(parse_spec(_spec("log.csv")), default_catalog(), tmp_path)
    w = problem.workload
    assert (w.prompt_tokens, w.output_tokens) == (800, 180)  # (100 + 300 + 2000) / 3, (10 + 30 + 500) / 3
    assert w.context_tokens == 2500  # the longest request
    assert w.traffic is not None and w.traffic.prompt.dist == "empirical"
    drawn = {(r.prompt_tokens, r.output_tokens) for r in draw_requests(w.traffic, 300, seed=random.randrange(1000))}
    assert drawn <= set(rows) and len(drawn) == 3  # only the file's pairs, never a prompt of one with the output of another


def test_json_lines_read_the_same(tmp_path):
    (tmp_path / "log.jsonl").write_text('{"prompt_tokens": 100, "output_tokens": 10}\n\n{"prompt_tokens": 300, "output_tokens": 30}\n')
    assert read_lengths(tmp_path / "log.jsonl") == ((100, 10), (300, 30))


@pytest.mark.parametrize(
    "text, where",
    [
        ("prompt_tokens,output_tokens\n100,10\n100,ten\n", ":3: output_tokens = ten: must be a whole number"),
        ("prompt_tokens,output_tokens\n100,0\n", ":2: output_tokens = 0:"),
        ("prompt,output\n100,10\n", ":1: columns = prompt, output: missing prompt_tokens, output_tokens"),
        ('{"prompt_tokens": 1}\n[1, 2]\n', ":1: output_tokens"),
        ('{"prompt_tokens": 1, "output_tokens": 2}\n[1, 2]\n', ":2: JSON Lines: each line must be an object"),
        ("prompt_tokens,output_tokens\n", "holds no requests"),
    ],
)
def test_a_bad_value_is_refused_at_its_line(tmp_path, text, where):
    f = tmp_path / "log.csv"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        read_lengths(f)
    assert where in exc.value.message()


def test_the_file_replaces_the_lengths_and_needs_a_rate():
    with pytest.raises(InputError, match="drop prompt_tokens and output_tokens"):
        parse_spec(_spec("log.csv", prompt_tokens=100))
    users = {"model": "llama-3.1-8b", "workload": {"users": 5, "lengths_file": "log.csv"}}
    with pytest.raises(InputError, match="lengths_file describes requests_per_s"):
        parse_spec(users)


def test_a_context_shorter_than_a_logged_request_is_refused(tmp_path):
    (tmp_path / "log.csv").write_text("prompt_tokens,output_tokens\n100,10\n4000,200\n")
    with pytest.raises(InputError, match="1 requests in .* are longer"):
        build_problem(parse_spec(_spec("log.csv", context_tokens=1000)), default_catalog(), tmp_path)
