"""The agent's own tools: hooks at the frameworks' tool boundaries and ``@tool``, each
call recorded and replayed through the run's gateway (``hooks.calls``)."""
