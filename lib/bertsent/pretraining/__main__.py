from .trainer import main

raise SystemExit(main())
