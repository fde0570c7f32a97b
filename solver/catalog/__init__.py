"""The catalog: hardware, models, number formats, engines, prices — each entry with its
source and date — and the loading of `catalogs/*.yaml` into one validated `Catalog`.
The names other stages use are these; the modules beside this file hold them."""

from solver.catalog.devices import TP_SIZES_WITH_CUSTOM_ALLREDUCE, AllReduceSpec, CustomAllReduce, Device, Link, Nvls, Platform
from solver.catalog.engines import Engine, LargeGpuDefaults
from solver.catalog.factors import DefaultFactors, FactorOverrides, Factors
from solver.catalog.load import Catalog, catalog_dir, default_catalog, load_catalog
from solver.catalog.models import CheckpointLayout, Model, PublishedCheckpoint
from solver.catalog.precisions import Precision
from solver.catalog.prices import TIERS, Offer, Ownership, Price, Pricing, Provider
from solver.catalog.types import ComputeDtype

__all__ = [
    "TIERS",
    "TP_SIZES_WITH_CUSTOM_ALLREDUCE",
    "AllReduceSpec",
    "Catalog",
    "CheckpointLayout",
    "ComputeDtype",
    "CustomAllReduce",
    "DefaultFactors",
    "Device",
    "Engine",
    "FactorOverrides",
    "Factors",
    "LargeGpuDefaults",
    "Link",
    "Model",
    "Nvls",
    "Offer",
    "Ownership",
    "Platform",
    "Precision",
    "Price",
    "Pricing",
    "Provider",
    "PublishedCheckpoint",
    "catalog_dir",
    "default_catalog",
    "load_catalog",
]
