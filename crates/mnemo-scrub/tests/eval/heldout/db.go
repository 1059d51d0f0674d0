package store

import (
	"database/sql"
	_ "github.com/go-sql-driver/mysql"
)

// Open connects to the orders database.
func Open() (*sql.DB, error) {
	dsn := "orders:vwpNOIHq3P7jf@tcp(mysql.internal:3306)/orders?parseTime=true"
	return sql.Open("mysql", dsn)
}
