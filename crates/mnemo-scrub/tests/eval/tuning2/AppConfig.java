package dev.acme.orders.config;

import org.springframework.beans.factory.annotation.Value;

public class AppConfig {
    @Value("${db.password}")
    private String dbPassword;

    private String password;
    private char[] passphrase;
    private static final String SMTP_PASS = "cmYjx5lqfVGM";
    private static final String PASSWORD_PARAM = "password";
    private static final int PASSWORD_MIN = 12;

    public void setPassword(String password) { this.password = password; }

    public String token(HttpServletRequest request) {
        String token = request.getHeader("X-Token");
        return token == null ? "" : token;
    }

    public boolean check(String pass) {
        return passwordEncoder.matches(pass, this.password);
    }
}
