"""Run langgraph-checkpoint-conformance (0.0.2, from PyPI) against ContextStoreSaver on the
server named by CONTEXTSTORE_URL / CONTEXTSTORE_TOKEN; exit 1 unless every test of every
capability passes: the base ones and the extended copy_thread, prune and delete_for_runs.

    python -m framework_tests.langgraph_conformance      (inside .venv-langgraph)
"""

import asyncio
import sys
from collections.abc import AsyncGenerator

from contextstore_client.adapters.langgraph import ContextStoreSaver, make_test_saver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.conformance.report import ProgressCallbacks


@checkpointer_test(name="ContextStoreSaver")
async def contextstore_saver() -> AsyncGenerator[ContextStoreSaver, None]:
    saver = make_test_saver()
    try:
        yield saver
    finally:
        saver.close()


async def main() -> int:
    report = await validate(contextstore_saver, progress=ProgressCallbacks.verbose())
    passed = failed = 0
    for name, result in report.results.items():
        if name in {c.value for c in ALL_CAPABILITIES}:
            passed += result.tests_passed
            failed += result.tests_failed + (0 if result.detected else 1)
        for failure in result.failures or []:
            print("FAILED", name, failure)
    report.print_report()
    print(f"{passed} tests passed, {failed} failed")
    # 58 base tests, and copy_thread 8, prune 8, delete_for_runs 7.
    return 0 if failed == 0 and passed == 81 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
