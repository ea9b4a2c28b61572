from praha.cli.main import main

raise SystemExit(main())
