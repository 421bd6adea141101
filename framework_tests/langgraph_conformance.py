"""Run langgraph-checkpoint-conformance (0.0.2, from PyPI) against ContextStoreSaver on the
server named by CONTEXTSTORE_URL / CONTEXTSTORE_TOKEN; exit 1 unless every base test passes.

    python -m framework_tests.langgraph_conformance      (inside .venv-langgraph)
"""

import asyncio
import sys
from collections.abc import AsyncGenerator

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from contextstore.adapters.langgraph import ContextStoreSaver, make_test_saver


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
        if name in {c.value for c in BASE_CAPABILITIES}:
            passed += result.tests_passed
            failed += result.tests_failed + (0 if result.detected else 1)
        for failure in result.failures or []:
            print("FAILED", name, failure)
    report.print_report()
    print(f"{passed} base tests passed, {failed} failed")
    return 0 if failed == 0 and passed == 58 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
