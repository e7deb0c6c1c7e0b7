/* xlac-plan-check: the fast start's plan reader on the command line, so that a Java test can check that a
 * plan pipeline FastStart writes for a real run is one launch_plan.c accepts (the format has one writer and
 * one reader, in two languages). Test-only; built under target/native-test.
 *
 *   xlac-plan-check PLAN_DIR CWD OPTION...    checks PLAN_DIR/<key>.plan against CWD, the options and this
 *       process's environment: "holds" and exit 0, or "fails: REASON" and exit 1 (2: usage)
 */
#include <stdio.h>

#include "launch_plan.h"

extern char **environ;

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: xlac-plan-check PLAN_DIR CWD OPTION...\n");
    return 2;
  }
  xplan plan;
  char reason[1024] = "";
  if (xplan_load(argv[1], argv[2], argv + 3, (size_t)(argc - 3), environ, &plan, reason, sizeof reason) != 0) {
    printf("fails: %s\n", reason);
    return 1;
  }
  xplan_free(&plan);
  printf("holds\n");
  return 0;
}
