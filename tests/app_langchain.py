"""The LangChain agent of the conformance suite (``langchain-openai``'s ChatOpenAI with a
bound tool, a tool loop in a runnable, one per turn), run in ``framework_worker.py``: the
instrumentations patch LangChain's callback manager for the whole process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import framework_agents
from framework_agents import MODEL, QUESTIONS, SYSTEM, Outcome, Traced, weather
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

INSTRUMENTORS = {
    "openinference": ("openinference.instrumentation.langchain", "LangChainInstrumentor"),
    "openllmetry": ("opentelemetry.instrumentation.langchain", "LangchainInstrumentor"),
}


def instrumentors(variant: str) -> list[Callable[[], Any]]:
    return framework_agents.instrumentors(INSTRUMENTORS, variant)


def agent(variant: str) -> Callable[[str, Traced | None], Outcome]:
    del variant

    def run(base_url: str, telemetry: Traced | None) -> Outcome:
        del telemetry
        outcome = Outcome()

        @tool
        def get_weather(city: str) -> str:
            """Current weather for a city"""
            return weather(outcome, city)

        model = ChatOpenAI(model=MODEL, base_url=base_url, api_key="sk-test", max_retries=0)
        bound = model.bind_tools([get_weather])

        def turn(ask: dict[str, Any]) -> str:
            messages: list[Any] = [SystemMessage(SYSTEM), HumanMessage(ask["question"])]
            while True:
                reply = _stream(bound, messages) if ask["stream"] else bound.invoke(messages)
                messages.append(reply)
                if not reply.tool_calls:
                    return str(reply.content)
                for call in reply.tool_calls:
                    result = get_weather.invoke(call["args"])
                    messages.append(ToolMessage(result, tool_call_id=call["id"]))

        agent_turn = RunnableLambda(turn, name="weather_agent")  # one trace per turn
        for index, question in enumerate(QUESTIONS):
            outcome.answers.append(agent_turn.invoke({"question": question, "stream": index > 0}))
        return outcome

    return run


def _stream(model: Any, messages: list[Any]) -> AIMessage:
    reply = None
    for chunk in model.stream(messages):
        reply = chunk if reply is None else reply + chunk
    assert reply is not None
    return AIMessage(
        content=reply.content,
        tool_calls=reply.tool_calls,
        response_metadata=reply.response_metadata,
    )
