from ledger.cli.main import main

main()
