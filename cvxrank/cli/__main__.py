import sys

from cvxrank.cli import main

sys.exit(main())
