"""MkDocs hook: render the API's OpenAPI document into reference/api.md and publish it beside the page.

The page's Markdown holds the marker ``<!-- openapi -->``; this hook replaces it with one section
per operation (parameters, responses) and one table per schema, from ``openapi_document()`` itself,
so the reference cannot drift from what the server serves at ``/api/openapi.json``.
"""

from __future__ import annotations

import json

from mkdocs.structure.files import File

from survey.web.api.openapi import openapi_document

MARKER = "<!-- openapi -->"
PAGE = "reference/api.md"
DOCUMENT = "reference/openapi.json"


def on_files(files, config):
    """Add the document itself to the site, so the page can link to it."""
    files.append(File.generated(config, DOCUMENT, content=json.dumps(openapi_document(), indent=2) + "\n"))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker {MARKER}")
    return markdown.replace(MARKER, render(openapi_document()))


def render(document: dict) -> str:
    """Return the operations and schemas of an OpenAPI document as Markdown."""
    lines = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            lines += _operation(method.upper(), path, operation)
    lines += ["## Schemas", ""]
    for name, schema in document["components"]["schemas"].items():
        lines += _schema(name, schema)
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _type(schema: dict) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#{name.lower()})"
    if "oneOf" in schema:
        return " or ".join(_type(choice) for choice in schema["oneOf"])
    if "const" in schema:
        return f"`{schema['const']}`"
    kind = schema.get("type", "any")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and "items" in schema:
        return f"array of {_type(schema['items'])}"
    rules = []
    if "enum" in schema:
        rules.append("one of " + ", ".join(f"`{value}`" for value in schema["enum"]))
    for key, word in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in schema:
            rules.append(f"{word} {schema[key]}")
    if "pattern" in schema:
        rules.append(f"matching `{schema['pattern']}`")
    if "format" in schema:
        rules.append(schema["format"])
    if "default" in schema:
        rules.append(f"default `{schema['default']}`")
    return kind + (f" ({', '.join(rules)})" if rules else "")


def _operation(method: str, path: str, operation: dict) -> list[str]:
    lines = [f"## {method} `{path}`", "", f"**{operation['summary']}.** {operation['description']}", ""]
    if operation.get("security") == []:
        lines += ["No token needed.", ""]
    if operation.get("parameters"):
        lines += ["| parameter | in | required | type | meaning |", "| --- | --- | --- | --- | --- |"]
        for parameter in operation["parameters"]:
            lines.append(f"| `{parameter['name']}` | {parameter['in']} | {'yes' if parameter.get('required') else 'no'}"
                         f" | {_cell(_type(parameter['schema']))} | {_cell(parameter.get('description', ''))} |")
        lines.append("")
    lines += ["| status | content | meaning |", "| --- | --- | --- |"]
    for status, response in operation["responses"].items():
        contents = response.get("content", {}) or {"": {}}
        for media, content in contents.items():
            shown = f"`{media}`" + (f": {_type(content['schema'])}" if "schema" in content and media else "")
            lines.append(f"| {status} | {_cell(shown)} | {_cell(response['description'])} |")
    return lines + [""]


def _schema(name: str, schema: dict) -> list[str]:
    lines = [f"### {name}", ""]
    properties = schema.get("properties", {})
    if not properties:
        return lines + [_cell(_type(schema)), ""]
    required = set(schema.get("required", ()))
    lines += ["| field | type | always there | meaning |", "| --- | --- | --- | --- |"]
    for field, field_schema in properties.items():
        lines.append(f"| `{field}` | {_cell(_type(field_schema))} | {'yes' if field in required else 'no'}"
                     f" | {_cell(field_schema.get('description', ''))} |")
    return lines + [""]
