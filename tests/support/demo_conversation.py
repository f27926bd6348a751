"""A conversation with the scripted demo model as the runtime holds it (its replies, the browser's tool results),
and the contact form's pages as the browser gives them to the model."""

from scripted_api.demo import DONE_TOOL, ScriptedDemoModel

MODEL = "claude-sonnet-5-5"

# What Playwright's aria_snapshot(mode="ai") gives for the contact form, filtered to interactive lines.
CONTACT_SNAPSHOT = """- link "Northwind Goods" [ref=f1e3] [cursor=pointer]:
- link "Home" [ref=f1e5] [cursor=pointer]:
- link "Shop" [ref=f1e6] [cursor=pointer]:
- link "Contact" [ref=f1e7] [cursor=pointer]:
- textbox "Your name" [ref=f1e14]
- textbox "Email address" [ref=f1e17]
- combobox "Topic" [ref=f1e20]:
- textbox "Message" [ref=f1e23]
- checkbox "Subscribe to the newsletter" [ref=f1e25]
- button "Send message" [ref=f1e26] [cursor=pointer]"""

THANKS_PAGE_TEXT = """Northwind Goods
Thank you, Ada Lovelace!
Your message has been received. This is what you sent:
Name\tAda Lovelace
Email\tada@example.com"""


def done_tool(data_schema: dict | None = None) -> dict:
    properties = {"success": {"type": "boolean"}, "output": {"type": "string"}}
    if data_schema is not None:
        properties["data"] = data_schema
    schema = {"type": "object", "properties": properties, "required": ["success", "output"]}
    return {"name": DONE_TOOL, "description": "Finish the run.", "input_schema": schema}


class Conversation:
    """An agent conversation as the runtime sends it: the model's replies and the browser's tool results."""

    def __init__(self, task: str, data_schema: dict | None = None) -> None:
        self.model = ScriptedDemoModel()
        self.tools = [{"type": "browser_toolset_20260801"}, done_tool(data_schema)]
        self.messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": task}]}]

    def request(self) -> dict:
        return {
            "model": MODEL,
            "max_tokens": 4096,
            "system": "You are a browser agent.",
            "tools": self.tools,
            "messages": self.messages,
        }

    def next_call(self) -> dict:
        """Ask the model for its turn, keep its reply in the conversation, and return its one tool call."""
        reply = self.model(self.request())
        self.messages.append({"role": "assistant", "content": reply["content"]})
        calls = [block for block in reply["content"] if block["type"] == "tool_use"]
        assert len(calls) == 1, reply
        return calls[0]

    def answer(self, call: dict, result: str | list, *, is_error: bool = False, then: str | None = None) -> None:
        content: list[dict] = [
            {"type": "tool_result", "tool_use_id": call["id"], "content": result, "is_error": is_error}
        ]
        if call.get("toolset_name"):
            content[0]["toolset_name"] = call["toolset_name"]
        if then:
            content.append({"type": "text", "text": then})
        self.messages.append({"role": "user", "content": content})
