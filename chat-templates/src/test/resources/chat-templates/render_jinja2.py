"""Renders chat templates as Hugging Face transformers' apply_chat_template does: a Jinja2
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loop controls, the tojson filter
without ASCII escaping, raise_exception and strftime_now, and the special tokens, tools=None and
documents=None in the context.

Reads a JSON list of {"template": str, "context": {...}} on stdin and writes a JSON list on stdout,
one {"output": str} or {"error": str} per case, in order. Run by ChatTemplateFamiliesTest."""
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now

results = []
for case in json.load(sys.stdin):
    context = {"tools": None, "documents": None}
    context.update(case["context"])
    try:
        results.append({"output": env.from_string(case["template"]).render(**context)})
    except jinja2.exceptions.TemplateError as e:
        results.append({"error": str(e)})
json.dump(results, sys.stdout, ensure_ascii=False)
