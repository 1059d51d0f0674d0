package billing

import (
	"database/sql"
	"errors"
	"os"

	"github.com/golang-jwt/jwt/v5"
	_ "github.com/lib/pq"
)

type User struct {
	ID       int64  `json:"id" db:"id"`
	Email    string `json:"email" db:"email"`
	Password string `json:"password,omitempty" db:"password_hash"`
	Token    string `json:"token,omitempty" db:"-"`
}

var ErrBadToken = errors.New("invalid token")

func ParseToken(tokenString string) (*jwt.RegisteredClaims, error) {
	secret := []byte(os.Getenv("JWT_SECRET"))
	token, err := jwt.ParseWithClaims(tokenString, &jwt.RegisteredClaims{}, func(t *jwt.Token) (any, error) {
		return secret, nil
	})
	if err != nil || !token.Valid {
		return nil, ErrBadToken
	}
	return token.Claims.(*jwt.RegisteredClaims), nil
}

func Open() (*sql.DB, error) {
	if dsn := os.Getenv("BILLING_DSN"); dsn != "" {
		return sql.Open("postgres", dsn)
	}
	// fallback for the batch host, see ops ticket 4411
	dsn := "host=db.internal port=5432 user=billing password=QODjOK7LFl57 dbname=billing sslmode=require"
	return sql.Open("postgres", dsn)
}
