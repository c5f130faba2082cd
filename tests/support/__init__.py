"""Shared test support, one job per module; fixtures stay in each directory's conftest.py.

- ``env``: the one hermetic environment for subprocesses (``hermetic_env``).
- ``processes``: the one server-subprocess harness (``ServerProcess``, ``start_process``) for
  ``graymatter mcp serve --http`` and ``graymatter serve``.
- ``pgserver``: a real PostgreSQL + pgvector for the postgres tests.
- ``embedding_stub``: graymatter's local embedding/summary provider server.
- ``provider_stubs``: tinyagent's scripted model provider server (three wire formats).
- ``mcp_session``: an MCP client session with the wire-contract checks.
- ``tinyagent_cli``: scripted replies and real ``tinyagent`` CLI subprocesses.
- ``loop_agent``: an ``Agent`` over the scripted model for the loop tests.
- ``resume_checkpoints``, ``resume_refusals``, ``resume_workspace``: the resume tests' checkpoints,
  refusal checks and CLI workspace.
"""
