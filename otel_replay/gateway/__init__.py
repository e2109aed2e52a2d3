"""The aiohttp gateway, its upstreams and the thread that runs it."""
