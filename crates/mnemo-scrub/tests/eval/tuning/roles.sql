CREATE USER analyst WITH PASSWORD 'bboIvi3wb5qH9';
ALTER USER 'app'@'localhost' IDENTIFIED BY 'ZzIQwzaPUpCm';
