"""The catalog: hardware, models, number formats, engines, prices, and loading them."""
