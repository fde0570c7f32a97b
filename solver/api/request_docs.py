"""The OpenAPI document's request bodies: each route's input as the JSON Schema of the
pydantic model that reads it (the solve spec, evaluate's input, the fleet file), with a
bundled spec as the example in YAML and in JSON — what a client generator and /docs show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

REF = "#/components/schemas/{model}"
BODIES = {
    "/solve": ("Spec", "specs/chat-llama70b.yaml"),
    "/validate": ("Spec", "specs/chat-llama70b.yaml"),
    "/pareto": ("Spec", "specs/chat-llama70b.yaml"),
    "/simulate": ("Spec", "specs/chat-70b-at-20-rps.yaml"),
    "/deploy": ("Spec", "specs/latency-critical-8b.yaml"),
    "/fleet": ("FleetSpec", "specs/fleet-three-services.yaml"),
    "/evaluate": ("EvaluateInput", "examples/seed-step1-llama8b-rtx4090.yaml"),
}
"""Route -> (the model its body is read by, the bundled file shown as its example)."""


def _checkout() -> Path | None:
    """The checkout holding specs/ and examples/ (an installed wheel ships neither: no example then)."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / "specs").is_dir() else None


def add_request_schemas(app: Any) -> None:
    """Wrap app.openapi so the document carries the input models and examples."""
    from pydantic import BaseModel

    from solver.spec.evaluate_input import EvaluateInput
    from solver.spec.fleet_spec import FleetSpec
    from solver.spec.solve_spec import Spec

    models: dict[str, type[BaseModel]] = {"Spec": Spec, "FleetSpec": FleetSpec, "EvaluateInput": EvaluateInput}
    plain = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return dict(app.openapi_schema)
        doc = plain()
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for name, model in models.items():
            schema = model.model_json_schema(ref_template=REF)
            schemas.update(schema.pop("$defs", {}))
            schemas[name] = schema
        root = _checkout()
        for path, (name, example) in BODIES.items():
            op = doc.get("paths", {}).get(path, {}).get("post")
            if op is None:
                continue
            json_body: dict[str, Any] = {"schema": {"$ref": REF.format(model=name)}}
            yaml_body: dict[str, Any] = {"schema": {"type": "string", "description": f"the same {name} as YAML"}}
            if root is not None and (root / example).is_file():
                import yaml

                text = (root / example).read_text()
                json_body["example"] = yaml.safe_load(text)
                yaml_body["example"] = text
            op["requestBody"] = {"required": True, "content": {"application/json": json_body, "application/yaml": yaml_body}}
        app.openapi_schema = doc
        return doc

    app.openapi = openapi
