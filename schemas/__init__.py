"""The JSON Schemas (Draft 2020-12) of every JSON file in a bundle, shipped as `reprokit.schemas`."""
