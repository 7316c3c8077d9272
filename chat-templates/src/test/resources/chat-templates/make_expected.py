"""Renders the conversation of expected.json with each template here, as Hugging Face's
apply_chat_template does (Jinja2 sandbox, trim_blocks, lstrip_blocks, add_generation_prompt), and
writes the results into expected.json. Run: python3 make_expected.py (needs jinja2)."""
import json
from pathlib import Path

from jinja2.sandbox import ImmutableSandboxedEnvironment

here = Path(__file__).parent
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": " Hi there "},
    {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "How are you?"},
]


def raise_exception(message):
    raise ValueError(message)


def token(value):
    return value["content"] if isinstance(value, dict) else value


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
env.globals["raise_exception"] = raise_exception
rendered = {}
for name in ["tinyllama", "smollm", "llama3", "llama2"]:
    config = json.loads((here / f"{name}.json").read_text(encoding="utf-8"))
    rendered[name] = env.from_string(config["chat_template"]).render(
        messages=MESSAGES,
        add_generation_prompt=True,
        bos_token=token(config["bos_token"]),
        eos_token=token(config["eos_token"]),
    )
out = {"messages": MESSAGES, "rendered": rendered}
(here / "expected.json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
