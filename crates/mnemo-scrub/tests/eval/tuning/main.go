package main

const dsn = "app:31c2XcAZ6TUA@tcp(127.0.0.1:3306)/app?charset=utf8mb4"
