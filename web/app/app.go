// Package app is one hookline process as the command line starts it: the
// configuration read from the environment (Config), the database it opens
// and migrates, the web server and the delivery worker wired together
// (serve, web, worker), the commands that act on the database and leave
// (migrate, apikey create, user add, db url|start|stop), and the command
// table's machinery (Table, Command, Parse) that main.go fills.
//
// It is the one package under web/ that builds the worker loop: the web
// server itself never calls it (DESIGN §1), this package runs both side by
// side in one process.
package app

// Version is sent as user-agent "hookline/<version>" and shown in the
// dashboard.
const Version = "0.1.0"
