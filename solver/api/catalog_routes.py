"""The catalog over HTTP: GET /devices, /models, /prices — the data `plan-opt list
--format json` prints (report/catalog_json.py), typed in the OpenAPI document."""

from __future__ import annotations

from typing import Any


def add_catalog_routes(app: Any) -> None:
    from fastapi import Query
    from fastapi.responses import JSONResponse

    from solver.api.errors import error_body, errors_for
    from solver.catalog import default_catalog
    from solver.errors import InputError
    from solver.report.catalog_json import DeviceOut, ModelOut, PriceBookOut, devices_out, models_out, price_book_out

    @app.get("/devices", response_model=list[DeviceOut], summary="the catalog's accelerators (plan-opt list devices --format json)")
    def devices() -> Any:
        return devices_out(default_catalog())

    @app.get("/models", response_model=list[ModelOut], summary="the catalog's models and their published checkpoints")
    def models() -> Any:
        return models_out(default_catalog())

    @app.get(
        "/prices",
        response_model=PriceBookOut,
        responses=errors_for(422),
        summary="the price book on a pricing basis (plan-opt list prices --format json)",
    )
    def prices(
        gpu: list[str] | None = Query(None, description="only these GPUs (repeatable)"),
        provider: list[str] | None = Query(None, description="providers, or kinds (hyperscaler, gpu_cloud, marketplace, managed), or all"),
        tier: str | None = Query(None, description="on_demand (default), spot, reserved_1y, reserved_3y, flex_start"),
        statistic: str | None = Query(None, description="median_low (default) or cheapest, of the providers' offers"),
    ) -> Any:
        from solver.catalog import TIERS

        if tier is not None and tier not in TIERS:
            return JSONResponse(error_body("tier", tier, f"tier = {tier}: one of {', '.join(TIERS)}"), status_code=422)
        if statistic not in (None, "median_low", "cheapest"):
            return JSONResponse(error_body("statistic", statistic, f"statistic = {statistic}: median_low or cheapest"), status_code=422)
        cat = default_catalog()
        try:
            pricing = cat.pricing(provider, tier, statistic, where="provider")  # type: ignore[arg-type]  # checked there, named
            gpus = [cat.device(g).name for g in gpu] if gpu else [d.name for d in cat.devices]
        except InputError as exc:
            return JSONResponse(error_body(exc.field.removeprefix("--"), exc.value, exc.message()), status_code=422)
        return price_book_out(cat, pricing, gpus)
