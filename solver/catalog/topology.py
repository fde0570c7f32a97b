"""Platforms as graphs: GPUs, switches and links, with per-direction bandwidth and
per-hop latency on each edge.

A tensor-parallel group must sit inside one scale-up domain — the GPUs reachable
without crossing a scale-out (network) link — and its ring all-reduce runs at the
slowest link on the ring. networkx is imported only here, and only when a group of
more than one GPU needs its ring.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import astuple, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from solver.catalog import cache
from solver.catalog.devices import Link, Platform

if TYPE_CHECKING:
    import networkx as nx

_T = TypeVar("_T")


@dataclass(frozen=True)
class Ring:
    """The ring a TP group all-reduces over."""

    size: int
    bandwidth_bytes_per_s: float
    """Per direction, per GPU, at the ring's slowest hop (times parallel rings on a mesh)."""
    hop_latency_s: float
    """Worst hop's latency (summed over the links the hop crosses)."""
    link_kinds: tuple[str, ...]
    """Kinds of links on the slowest hop, e.g. ('pcie',)."""
    parallel_rings: int = 1


def _gpu(node: int, i: int) -> str:
    return f"n{node}.gpu{i}"


def build_graph(platform: Platform, nodes: int = 1) -> nx.Graph[str]:
    """The platform's topology for `nodes` nodes as an undirected networkx graph.
    Edge attributes: bandwidth (bytes/s per direction), latency_s, kind, scale_out."""
    import networkx as nx

    g: nx.Graph[str] = nx.Graph()
    up, host = platform.scale_up, platform.host
    n = platform.gpus_per_node

    def link(a: str, b: str, spec: Link, scale_out: bool = False) -> None:
        g.add_edge(a, b, bandwidth=spec.bandwidth_bytes_per_s, latency_s=spec.latency_s, kind=spec.kind, scale_out=scale_out)

    for node in range(nodes):
        gpus = [_gpu(node, i) for i in range(n)]
        g.add_nodes_from(gpus, kind="gpu")
        # Platform.__post_init__ gives every multi-GPU layout a scale_up link, and pairs a host link.
        if platform.layout == "switch":
            assert up is not None
            sw = f"n{node}.switch"
            for gpu in gpus:
                link(gpu, sw, up)
        elif platform.layout == "mesh":
            assert up is not None
            for i, a in enumerate(gpus):
                for b in gpus[i + 1 :]:
                    link(a, b, up)
        elif platform.layout == "pairs":
            assert up is not None and host is not None
            hub = f"n{node}.host"
            for i in range(0, n - 1, 2):
                link(gpus[i], gpus[i + 1], up)
            for gpu in gpus:
                link(gpu, hub, host)
        if platform.scale_out is not None and nodes > 1:
            for gpu in gpus:
                link(gpu, "network", platform.scale_out, scale_out=True)
    return g


@lru_cache(maxsize=64)
def scale_up_domain_size(platform: Platform) -> int:
    """GPUs reachable from one GPU without crossing the network."""
    return _memo(platform, "domain", lambda: _compute_domain(platform))


def _compute_domain(platform: Platform) -> int:
    import networkx as nx

    g = build_graph(platform, nodes=2 if platform.scale_out is not None and platform.max_nodes > 1 else 1)
    scale_out: Iterable[tuple[str, str, bool | None]] = g.edges(data="scale_out")
    local = g.edge_subgraph([(a, b) for a, b, so in scale_out if not so]).copy()
    first = _gpu(0, 0)
    if first not in local:
        return 1
    return sum(1 for v in nx.node_connected_component(local, first) if g.nodes[v].get("kind") == "gpu")


@lru_cache(maxsize=256)
def tp_ring(platform: Platform, size: int) -> Ring:
    """The ring of a TP group of `size` GPUs placed on consecutive GPUs of one node
    (bridged pairs together). Each hop follows the widest path between neighbours; a
    path through a maximum spanning tree is a widest path.

    Results (and domain sizes) are kept in a small on-disk cache keyed by the
    platform's full contents and this module's source, so that a CLI run does not
    pay networkx's import (a third of a second here) for an answer computed before."""
    if size == 1:
        return Ring(1, float("inf"), 0.0, ())
    found = _memo(platform, f"ring{size}", lambda: _ring_fields(platform, size))
    if found is None:
        raise ValueError(f"{platform.name} cannot join {size} GPUs")
    bw, lat, kinds, parallel = found
    return Ring(size, bw, lat, tuple(kinds), parallel)


def _ring_fields(platform: Platform, size: int) -> list | None:
    """JSON-able ring figures, or None when no link joins that many GPUs (cached too)."""
    try:
        return list(astuple(_compute_ring(platform, size)))[1:]
    except ValueError:
        return None


def _compute_ring(platform: Platform, size: int) -> Ring:
    """A group larger than a node spans nodes over the network (which a TP group may
    not do: the interconnect constraint says so, but the figures still exist)."""
    import networkx as nx

    per_node = platform.gpus_per_node
    nodes = -(-size // per_node)
    if nodes > 1 and (platform.scale_out is None or nodes > platform.max_nodes):
        raise ValueError(f"{platform.name} cannot join {size} GPUs")
    g = build_graph(platform, nodes=nodes)
    tree = nx.maximum_spanning_tree(g, weight="bandwidth")
    gpus = [_gpu(i // per_node, i % per_node) for i in range(size)]
    worst_bw, worst_lat, kinds = float("inf"), 0.0, ()
    for a, b in zip(gpus, gpus[1:] + gpus[:1]):
        tree_path = nx.shortest_path(tree, a, b)
        bw = min(g.edges[u, v]["bandwidth"] for u, v in zip(tree_path, tree_path[1:]))
        # Among the paths that wide, the one with the least latency (a full mesh's
        # direct link rather than a detour through the tree).
        bandwidths: Iterable[tuple[str, str, float]] = g.edges(data="bandwidth")
        wide = g.edge_subgraph([(u, v) for u, v, x in bandwidths if x >= bw])
        path = nx.dijkstra_path(wide, a, b, weight="latency_s")
        edges = [g.edges[u, v] for u, v in zip(path, path[1:])]
        lat = sum(e["latency_s"] for e in edges)
        if bw < worst_bw:
            worst_bw, kinds = bw, tuple(sorted({e["kind"] for e in edges if e["bandwidth"] == bw}))
        worst_lat = max(worst_lat, lat)
    # On a full mesh each GPU has a direct link to every peer: collective libraries
    # run size-1 rings at once (RCCL on MI300X), so the usable bandwidth multiplies.
    parallel = size - 1 if platform.layout == "mesh" else 1
    return Ring(size, worst_bw * parallel, worst_lat, kinds, parallel)


# --------------------------------------------------------------------------- cache

_SOURCE = cache.source_digest(__file__)
_loaded: dict[str, object] | None = None
"""This process's answers, by cache key (None: none yet, as in a new process)."""


def _finite(x: object, low: float, strict: bool) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and (x > low if strict else x >= low)


def _well_formed(platform: Platform, what: str, answer: object) -> bool:
    """Whether a cached answer is one `what` could compute for `platform`: a domain
    size (a whole number of GPUs the platform holds), or a ring's [bandwidth, latency,
    link kinds, parallel rings] built of the platform's own links (the bandwidth one of
    theirs times the rings, the kinds theirs, the latency at most every link's in
    turn), or None; anything else is rebuilt. So a cached answer, even one signed by
    this user, can say nothing the platform's catalog entry could not."""
    links = [x for x in (platform.scale_up, platform.host, platform.scale_out) if x is not None]
    most = platform.gpus_per_node * platform.max_nodes
    count = isinstance(answer, int) and not isinstance(answer, bool) and 1 <= answer <= most
    if what == "domain":
        return count
    if answer is None:
        return True
    if not isinstance(answer, list) or len(answer) != 4:
        return False
    bw, lat, kinds, parallel = answer
    size = int(what.removeprefix("ring")) if what.removeprefix("ring").isdigit() else 0
    staged = platform.allreduce.host_staged_hop_latency_s or 0.0 if platform.allreduce else 0.0
    longest_s = (size + 2) * (sum(x.latency_s for x in links) + staged)
    return (
        isinstance(parallel, int)
        and not isinstance(parallel, bool)
        and parallel in (1, size - 1)
        and _finite(bw, 0.0, strict=True)
        and any(bw == x.bandwidth_bytes_per_s * parallel for x in links)
        and _finite(lat, 0.0, strict=False)
        and lat <= longest_s
        and isinstance(kinds, list)
        and all(isinstance(k, str) and k in {x.kind for x in links} for k in kinds)
    )


def _memo(platform: Platform, what: str, compute: Callable[[], _T]) -> _T:
    """A JSON-able answer about `platform`: from this process, else from its on-disk
    cache entry (keyed by the platform's full contents and this module's source, and
    believed only when well-formed), else computed and stored."""
    global _loaded
    if _loaded is None:
        _loaded = {}
    key = cache.digest(_SOURCE.encode(), repr(platform).encode(), what.encode())
    if key not in _loaded:
        entry = cache.load("topology", key)
        if isinstance(entry, dict) and set(entry) == {"answer"} and _well_formed(platform, what, entry["answer"]):
            _loaded[key] = entry["answer"]
        else:
            answer = compute()
            _loaded[key] = answer
            body = cache.encode({"answer": answer})
            if body is not None:
                cache.store("topology", key, body)
    return _loaded[key]  # type: ignore[return-value]  # what compute() gave for this key, or its well-formed copy
