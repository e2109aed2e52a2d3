"""Two small agents as a team would write them, and their production run.

Each is a module with one entry point, ``answer(question)``: the model asks for the
weather tool, the agent runs it, the model answers. ``openinference_agent`` marks its entry
point with OpenInference's ``@tracer.agent`` (the model calls traced by
openinference-instrumentation-openai); ``genai_agent`` opens a GenAI ``invoke_agent`` span
itself, with ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (the model calls traced
by the OpenTelemetry OpenAI instrumentation). ``PRODUCTION`` runs one of them the way
production would, its spans exported to ``traces.jsonl`` as the Collector writes them.
"""

from __future__ import annotations

import textwrap

from third_party_agents import FINAL_TEXT, OPENAI_TOOLS, QUESTION, SYSTEM, TOOL_RESULT

__all__ = ["AGENTS", "FINAL_TEXT", "PRODUCTION", "QUESTION", "SYSTEM"]

_TOOL_LOOP = (
    f"""
SYSTEM = {SYSTEM!r}
TOOLS = {OPENAI_TOOLS!r}


def get_weather(city: str) -> str:
    return {TOOL_RESULT!r}
"""
    + """

def ask_model(question: str) -> str:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    with openai.OpenAI(max_retries=0) as client:
        while True:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = get_weather(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
"""
)

OPENINFERENCE_AGENT = (
    textwrap.dedent(
        '''
        """The weather agent, its entry point traced by OpenInference."""
        import json

        import openai
        from openinference.instrumentation import OITracer, TraceConfig
        from opentelemetry import trace

        tracer = OITracer(trace.get_tracer(__name__), config=TraceConfig())
        '''
    )
    + _TOOL_LOOP
    + textwrap.dedent(
        """

        @tracer.agent
        def answer(question: str) -> str:
            return ask_model(question)
        """
    )
)

GENAI_AGENT = (
    textwrap.dedent(
        '''
        """The weather agent, its run an invoke_agent span of the GenAI conventions."""
        import json

        import openai
        from opentelemetry import trace

        tracer = trace.get_tracer(__name__)


        def _messages(role: str, text: str) -> str:
            return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])
        '''
    )
    + _TOOL_LOOP
    + textwrap.dedent(
        """

        def answer(question: str) -> str:
            with tracer.start_as_current_span("invoke_agent weather") as span:
                span.set_attribute("gen_ai.operation.name", "invoke_agent")
                span.set_attribute("gen_ai.agent.name", "weather")
                span.set_attribute("gen_ai.input.messages", _messages("user", question))
                text = ask_model(question)
                span.set_attribute("gen_ai.output.messages", _messages("assistant", text))
                return text
        """
    )
)

AGENTS = {
    "openinference": (OPENINFERENCE_AGENT, "openinference-openai"),
    "genai": (GENAI_AGENT, "otel-openai-v2"),
}

PRODUCTION = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from opentelemetry import trace
    from third_party_agents import instrumentor, traced

    import weather_agent

    with traced(Path("."), [instrumentor(sys.argv[1])]) as out:
        trace.set_tracer_provider(out.tracer_provider)
        print(weather_agent.answer(sys.argv[2]))
    """
)
